#include "engine/sparse/sparse_ffn.h"

#include <algorithm>
#include <cmath>

#include "engine/kernels/dequantize.h"
#include "engine/kernels/matmul.h"
#include "engine/kernels/sparse_ops.h"
#include "engine/kernels/vec_dot.h"
#include "engine/kernels/vec_ops.h"

namespace sparrow {
namespace {

template <typename T>
T* Grow(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

}  // namespace

SparseFfn::SparseFfn(const Model& model, std::shared_ptr<const SparsePlan> plan,
                     kernels::ThreadPool* pool)
    : model_(model), plan_(std::move(plan)), pool_(pool), predictor_(pool), dense_(model, pool) {}

void SparseFfn::Compute(int64_t il, const FfnInput& in, float* out) {
  const ModelConfig& c = model_.config();
  const int64_t n = in.n;
  // Which tokens run sparse, and which count as decoded in counters(): decoded tokens are both;
  // PowerInfer files mask prompt tokens too (as PowerInfer does) without counting them;
  // sparse_prompts (perplexity) runs and counts every token.
  sparse_.resize(n);
  counted_.resize(n);
  int64_t n_sparse = 0;
  for (int64_t t = 0; t < n; ++t) {
    const bool decoded = plan_->sparse_prompts || (in.decode != nullptr && in.decode[t] != 0);
    counted_[t] = decoded;
    sparse_[t] = decoded || plan_->mask_prompts;
    n_sparse += sparse_[t];
  }
  if (n_sparse == 0) return dense_.Compute(il, in, out);
  const bool predicted = plan_->policy == SparsePolicy::kPredictor;
  float* logits = nullptr;
  if (predicted) {
    logits = Grow(logits_, static_cast<size_t>(n * c.n_ff));
    const std::vector<float>& bias = plan_->pred_bias[il];
    predictor_.Logits(plan_->pred_fc1[il], plan_->pred_fc2[il],
                      bias.empty() ? nullptr : bias.data(),
                      plan_->predictor_reads_normed ? in.normed : in.residual, n, logits);
  }
  if (n_sparse == n && n <= plan_->gather_max_tokens) {
    for (int64_t t = 0; t < n; ++t) {
      if (predicted) {
        PredictedOne(il, logits + t * c.n_ff, in.normed + t * c.n_embd, out + t * c.n_embd,
                     counted_[t]);
      } else {
        ThresholdOne(il, in.normed + t * c.n_embd, out + t * c.n_embd);
      }
    }
    return;
  }
  MixedBatch(il, in, logits, n_sparse, out);
}

void SparseFfn::CountDecoded(bool decoded) {
  if (!decoded) return;
  ++counters_.decode_tokens;
  counters_.neurons_total += model_.config().n_ff;
  counters_.neurons_computed += static_cast<int64_t>(active_.size());
}

void SparseFfn::AccumulateDown(int64_t il, float* h, float* out, bool decoded) {
  const ModelConfig& c = model_.config();
  const kernels::WeightMatrix& down_t = plan_->down_t[il];
  const auto n_active = static_cast<int64_t>(active_.size());
  CountDecoded(decoded);
  // Down's input rounds as a dense product would round it (and as PowerInfer scales its rows).
  kernels::RoundToVecDotType(down_t.type, h, c.n_ff);
  std::fill_n(out, c.n_embd, 0.0f);
  kernels::AccumulateRows(down_t, active_.data(), n_active, h, c.n_ff, 1, out, c.n_embd, pool_);
}

void SparseFfn::PredictedOne(int64_t il, const float* logits, const float* normed, float* out,
                             bool decoded) {
  const ModelConfig& c = model_.config();
  const LayerWeights& l = model_.weights().layers[il];
  active_.clear();
  for (int32_t i = 0; i < c.n_ff; ++i) {
    if (logits[i] >= plan_->predictor_threshold) active_.push_back(i);
  }
  const auto n_active = static_cast<int64_t>(active_.size());
  float* g = Grow(gate_, n_active);
  float* u = Grow(up_, n_active);
  kernels::MatMulRows(l.ffn_gate, active_.data(), n_active, normed, g, pool_);
  kernels::MatMulRows(l.ffn_up, active_.data(), n_active, normed, u, pool_);
  GatedActivation(c.ffn_kind, g, u, n_active);
  float* h = Grow(h_, static_cast<size_t>(c.n_ff));
  std::fill_n(h, c.n_ff, 0.0f);
  for (int64_t k = 0; k < n_active; ++k) h[active_[k]] = g[k];
  AccumulateDown(il, h, out, decoded);
}

void SparseFfn::SelectByThreshold(int64_t il, float* h, const float* u) {
  const int64_t n_ff = model_.config().n_ff;
  const float threshold = plan_->thresholds[il];
  const bool cats = plan_->policy == SparsePolicy::kCats;
  active_.clear();
  for (int32_t i = 0; i < n_ff; ++i) {
    const float a = h[i];
    h[i] = a * u[i];
    if (std::fabs(cats ? a : h[i]) >= threshold) {
      active_.push_back(i);
    } else {
      h[i] = 0.0f;
    }
  }
}

void SparseFfn::ThresholdOne(int64_t il, const float* normed, float* out) {
  const ModelConfig& c = model_.config();
  const LayerWeights& l = model_.weights().layers[il];
  float* h = Grow(h_, static_cast<size_t>(c.n_ff));
  float* u = Grow(up_, static_cast<size_t>(c.n_ff));
  kernels::MatMul(l.ffn_gate, normed, 1, c.n_embd, h, c.n_ff, pool_);
  kernels::Silu(h, c.n_ff, h);
  if (plan_->policy == SparsePolicy::kCats) {
    // Only the neurons whose gate passes read their up rows; the rest of u is never used.
    active_.clear();
    for (int32_t i = 0; i < c.n_ff; ++i) {
      if (std::fabs(h[i]) >= plan_->thresholds[il]) active_.push_back(i);
    }
    const auto n_active = static_cast<int64_t>(active_.size());
    float* gathered = Grow(gate_, n_active);
    kernels::MatMulRows(l.ffn_up, active_.data(), n_active, normed, gathered, pool_);
    std::fill_n(u, c.n_ff, 0.0f);
    for (int64_t k = 0; k < n_active; ++k) u[active_[k]] = gathered[k];
  } else {
    kernels::MatMul(l.ffn_up, normed, 1, c.n_embd, u, c.n_ff, pool_);
  }
  SelectByThreshold(il, h, u);
  AccumulateDown(il, h, out, true);
}

void SparseFfn::MixedBatch(int64_t il, const FfnInput& in, const float* logits, int64_t n_sparse,
                           float* out) {
  const ModelConfig& c = model_.config();
  const LayerWeights& l = model_.weights().layers[il];
  const int64_t n = in.n, d = c.n_embd;
  const size_t size = static_cast<size_t>(n * c.n_ff);
  float* g = Grow(gate_, size);
  float* u = Grow(up_, size);
  kernels::MatMul(l.ffn_gate, in.normed, n, d, g, c.n_ff, pool_);
  kernels::MatMul(l.ffn_up, in.normed, n, d, u, c.n_ff, pool_);
  // Decoded tokens: their own neurons, through the down rows; prompt tokens: dense, gathered for
  // one GEMM. A decoded token's values are the ones it gets alone (PredictedOne/ThresholdOne).
  float* dense_in = Grow(dense_in_, size);
  int64_t n_dense = 0;
  // Several sparse tokens: their masked activations join the dense ones in one down GEMM.
  const bool dense_down = l.ffn_down.data != nullptr && plan_->dense_down_min_tokens > 0 &&
                          n_sparse >= plan_->dense_down_min_tokens;
  for (int64_t t = 0; t < n; ++t) {
    float* gt = g + t * c.n_ff;
    const float* ut = u + t * c.n_ff;
    if (!sparse_[t]) {
      GatedActivation(c.ffn_kind, gt, ut, c.n_ff);
      std::copy_n(gt, c.n_ff, dense_in + n_dense++ * c.n_ff);
      continue;
    }
    if (logits != nullptr) {
      GatedActivation(c.ffn_kind, gt, ut, c.n_ff);
      active_.clear();
      const float* lt = logits + t * c.n_ff;
      for (int32_t i = 0; i < c.n_ff; ++i) {
        if (lt[i] >= plan_->predictor_threshold) {
          active_.push_back(i);
        } else {
          gt[i] = 0.0f;
        }
      }
    } else {
      kernels::Silu(gt, c.n_ff, gt);
      SelectByThreshold(il, gt, ut);
    }
    if (dense_down) {
      CountDecoded(counted_[t]);
      std::copy_n(gt, c.n_ff, dense_in + n_dense++ * c.n_ff);
      continue;
    }
    AccumulateDown(il, gt, out + t * d, counted_[t]);
  }
  if (n_dense == 0) return;
  float* dense_out = Grow(dense_out_, static_cast<size_t>(n_dense * d));
  DenseDown(c, l, dense_in, n_dense, dense_out, all_rows_, pool_);
  for (int64_t t = 0, k = 0; t < n; ++t) {
    if (!sparse_[t] || dense_down) std::copy_n(dense_out + k++ * d, d, out + t * d);
  }
}

}  // namespace sparrow
