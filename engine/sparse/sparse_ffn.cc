#include "engine/sparse/sparse_ffn.h"

#include <algorithm>
#include <numeric>

#include "engine/kernels/dequantize.h"
#include "engine/kernels/matmul.h"
#include "engine/kernels/sparse_ops.h"
#include "engine/kernels/vec_dot.h"
#include "engine/runtime/dense_ffn.h"

namespace sparrow {
namespace {

template <typename T>
T* Grow(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

}  // namespace

SparseFfn::SparseFfn(const Model& model, kernels::ThreadPool* pool)
    : model_(model), pool_(pool), predictor_(pool), threshold_(model.config().sparse_threshold) {
  all_rows_.resize(model.config().n_ff);
  std::iota(all_rows_.begin(), all_rows_.end(), 0);
}

void SparseFfn::Compute(int64_t il, const float* residual, const float* normed, int64_t n,
                        float* out) {
  const ModelConfig& c = model_.config();
  const LayerWeights& l = model_.weights().layers[il];
  float* logits = Grow(logits_, static_cast<size_t>(n * c.n_ff));
  predictor_.Logits(l, residual, n, logits);
  if (n <= kMaxGatherTokens) {
    for (int64_t t = 0; t < n; ++t)
      GatherOne(l, logits + t * c.n_ff, normed + t * c.n_embd, out + t * c.n_embd);
  } else {
    MaskedBatch(l, logits, normed, n, out);
  }
}

void SparseFfn::GatherOne(const LayerWeights& l, const float* logits, const float* normed,
                          float* out) {
  const ModelConfig& c = model_.config();
  active_.clear();
  for (int32_t i = 0; i < c.n_ff; ++i) {
    if (logits[i] >= threshold_) active_.push_back(i);
  }
  const auto n_active = static_cast<int64_t>(active_.size());
  ++counters_.decode_tokens;
  counters_.neurons_total += c.n_ff;
  counters_.neurons_computed += n_active;

  // The token's activations in each matrix's vec-dot type, once for all its rows.
  auto quantize = [&](const kernels::WeightMatrix& w, std::vector<uint8_t>& buf) {
    const TensorType act = kernels::VecDotType(w.type);
    kernels::QuantizeActivationRow(act, normed, Grow(buf, kernels::RowBytes(act, c.n_embd)),
                                   c.n_embd);
    return buf.data();
  };
  float* g = Grow(gate_, n_active);
  float* u = Grow(up_, n_active);
  kernels::GatherRowDots(l.ffn_gate, active_.data(), n_active, quantize(l.ffn_gate, act_gate_), g,
                         pool_);
  kernels::GatherRowDots(l.ffn_up, active_.data(), n_active, quantize(l.ffn_up, act_up_), u, pool_);
  GatedActivation(c.ffn_kind, g, u, n_active);

  float* h = Grow(h_, static_cast<size_t>(c.n_ff));
  std::fill_n(h, c.n_ff, 0.0f);
  for (int64_t k = 0; k < n_active; ++k) h[active_[k]] = g[k];
  kernels::RoundToVecDotType(l.ffn_down_t.type, h, c.n_ff);
  std::fill_n(out, c.n_embd, 0.0f);
  kernels::AccumulateRows(l.ffn_down_t, active_.data(), n_active, h, c.n_ff, 1, out, c.n_embd,
                          pool_);
}

void SparseFfn::MaskedBatch(const LayerWeights& l, const float* logits, const float* normed,
                            int64_t n, float* out) {
  const ModelConfig& c = model_.config();
  const size_t size = static_cast<size_t>(n * c.n_ff);
  float* g = Grow(gate_, size);
  float* u = Grow(up_, size);
  kernels::MatMul(l.ffn_gate, normed, n, c.n_embd, g, c.n_ff, pool_);
  kernels::MatMul(l.ffn_up, normed, n, c.n_embd, u, c.n_ff, pool_);
  GatedActivation(c.ffn_kind, g, u, n * c.n_ff);
  for (size_t i = 0; i < size; ++i) {
    if (logits[i] < threshold_) g[i] = 0.0f;
  }
  for (int64_t t = 0; t < n; ++t)
    kernels::RoundToVecDotType(l.ffn_down_t.type, g + t * c.n_ff, c.n_ff);
  std::fill_n(out, n * c.n_embd, 0.0f);
  kernels::AccumulateRows(l.ffn_down_t, all_rows_.data(), c.n_ff, g, c.n_ff, n, out, c.n_embd,
                          pool_);
}

}  // namespace sparrow
