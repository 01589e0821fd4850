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
    : model_(model), plan_(std::move(plan)), pool_(pool), predictor_(pool), dense_(model, pool) {
  if (plan_->levels) level_ = &plan_->levels->Current();
}

std::optional<double> SparseFfn::SetSparsity(double sparsity) {
  if (!plan_->levels) return std::nullopt;
  return plan_->levels->Set(sparsity);
}

std::optional<double> SparseFfn::sparsity() const {
  if (!plan_->levels) return std::nullopt;
  return plan_->levels->Current().sparsity;
}

uint64_t SparseFfn::scratch_bytes() const {
  return dense_.scratch_bytes() + CapacityBytes(logits_, gate_, up_, h_, dense_in_, dense_out_,
                                                active_, all_rows_, sparse_, counted_, tok_ids_,
                                                tok_start_, union_, pos_, failed_ids_, batch_of_,
                                                dot_at_, up_dot_, gate_dot_, recs_, gate_ptrs_,
                                                up_ptrs_, down_ptrs_, bad_, alpha_);
}

void SparseFfn::ReleaseScratch() {
  dense_.ReleaseScratch();
  // The ones that grow with the batch's tokens; the per-neuron ones are a layer's at most.
  ReleaseVectors(logits_, gate_, up_, h_, dense_in_, dense_out_, tok_ids_, up_dot_, gate_dot_);
}

Status SparseFfn::Compute(int64_t il, const FfnInput& in, float* out) {
  const ModelConfig& c = model_.config();
  const int64_t n = in.n;
  // Which tokens run sparse, and which count as decoded in counters(): decoded tokens are both;
  // PowerInfer files mask prompt tokens too (as PowerInfer does) without counting them;
  // sparse_prompts (perplexity) runs and counts every token.
  current_layer_ = il;
  // The level is read at the first layer only: a switch between two layers of a pass (the memory
  // plan is applied between steps, but nothing stops another thread) waits for the next pass.
  if (il == 0 && plan_->levels) level_ = &plan_->levels->Current();
  sparse_.resize(n);
  counted_.resize(n);
  int64_t n_sparse = 0;
  for (int64_t t = 0; t < n; ++t) {
    const bool decoded = plan_->sparse_prompts || (in.decode != nullptr && in.decode[t] != 0);
    counted_[t] = decoded;
    sparse_[t] = decoded || plan_->mask_prompts;
    n_sparse += sparse_[t];
  }
  if (level_ && level_->dense()) {
    // The dense level (never offered with a store, whose dense FFN would read every neuron from
    // flash): the whole-matrix FFN, the same bits as a server started dense.
    for (int64_t t = 0; t < n; ++t) CountDense(counted_[t]);
    return dense_.Compute(il, in, out);
  }
  if (plan_->store) return FromStore(il, in, n_sparse, out);
  if (n_sparse == 0) return dense_.Compute(il, in, out);
  const float* logits = Logits(il, in);
  if (n_sparse == n && n <= plan_->gather_max_tokens) {
    for (int64_t t = 0; t < n; ++t) {
      if (logits) {
        PredictedOne(il, logits + t * c.n_ff, in.normed + t * c.n_embd, out + t * c.n_embd,
                     counted_[t]);
      } else {
        ThresholdOne(il, in.normed + t * c.n_embd, out + t * c.n_embd);
      }
    }
    return Status::Ok();
  }
  MixedBatch(il, model_.weights().layers[il], plan_->down_t[il], in, logits, n_sparse, out);
  return Status::Ok();
}

float* SparseFfn::Logits(int64_t il, const FfnInput& in) {
  if (plan_->policy != SparsePolicy::kPredictor) return nullptr;
  float* logits = Grow(logits_, static_cast<size_t>(in.n * model_.config().n_ff));
  const std::vector<float>& bias = plan_->pred_bias[il];
  predictor_.Logits(plan_->pred_fc1[il], plan_->pred_fc2[il], bias.empty() ? nullptr : bias.data(),
                    plan_->predictor_reads_normed ? in.normed : in.residual, in.n, logits);
  return logits;
}

void SparseFfn::SelectTokens(int64_t il, const FfnInput& in, const float* logits) {
  const ModelConfig& c = model_.config();
  const int64_t n = in.n;
  tok_ids_.clear();
  tok_start_.assign(1, 0);
  if (!logits) {
    // Threshold policies: the gate is resident; act(gate) for every neuron of every token.
    float* h = Grow(gate_, static_cast<size_t>(n * c.n_ff));
    kernels::MatMul(model_.weights().layers[il].ffn_gate, in.normed, n, c.n_embd, h, c.n_ff, pool_);
    GateActivation(c.ffn_kind, h, n * c.n_ff);
  }
  for (int64_t t = 0; t < n; ++t) {
    if (logits) {
      const float* lt = logits + t * c.n_ff;
      for (int32_t i = 0; i < c.n_ff; ++i) {
        if (lt[i] >= plan_->predictor_threshold) tok_ids_.push_back(i);
      }
    } else {
      const float* ht = gate_.data() + t * c.n_ff;
      const float threshold = level_->thresholds[il];
      for (int32_t i = 0; i < c.n_ff; ++i) {
        if (std::fabs(ht[i]) >= threshold) tok_ids_.push_back(i);
      }
    }
    tok_start_.push_back(static_cast<int32_t>(tok_ids_.size()));
  }
  pos_.assign(static_cast<size_t>(c.n_ff), -1);
  union_.clear();
  for (int32_t id : tok_ids_) {
    if (pos_[id] < 0) {
      pos_[id] = static_cast<int32_t>(union_.size());
      union_.push_back(id);
    }
  }
}

Status SparseFfn::FromStore(int64_t il, const FfnInput& in, int64_t n_sparse, float* out) {
  const ModelConfig& c = model_.config();
  const int64_t n = in.n;
  const float* logits = n_sparse > 0 ? Logits(il, in) : nullptr;
  if (n_sparse == n) {
    SelectTokens(il, in, logits);
    // Gathering pays while the step's tokens share few neurons; a step that uses most of them
    // (a prompt under PowerInfer's masking) reads the layer whole, below, unless the device is
    // short of the memory that takes.
    if (n == 1 || static_cast<int64_t>(union_.size()) * 2 <= c.n_ff ||
        !plan_->store->layer_staging()) {
      return GatherFromStore(il, in, out);
    }
  }
  const uint8_t* records = nullptr;
  Status st = plan_->store->ReadLayer(static_cast<int32_t>(il), &records);
  if (!st.ok()) {
    std::fill_n(out, n * c.n_embd, 0.0f);
    if (in.failed) std::fill_n(in.failed, n, 1);
    return st;
  }
  // The layer's views rebased from the mapping onto the staged copy of its records.
  const LayerBundles& lb = plan_->store->layout().layers[il];
  auto rebase = [&](kernels::WeightMatrix w) {
    const uint8_t* p = static_cast<const uint8_t*>(w.data);
    if (p >= lb.records && p < lb.records + lb.record_bytes) w.data = records + (p - lb.records);
    return w;
  };
  LayerWeights l = model_.weights().layers[il];
  l.ffn_gate = rebase(l.ffn_gate);
  l.ffn_up = rebase(l.ffn_up);
  l.ffn_down_t = rebase(l.ffn_down_t);
  if (n_sparse == 0) {
    dense_.ComputeLayer(il, l, in, out);
  } else {
    MixedBatch(il, l, rebase(plan_->down_t[il]), in, logits, n_sparse, out);
  }
  return Status::Ok();
}

Status SparseFfn::GatherFromStore(int64_t il, const FfnInput& in, float* out) {
  const ModelConfig& c = model_.config();
  const int64_t n = in.n;
  NeuronStore& store = *plan_->store;
  recs_.resize(union_.size());
  store.Start(static_cast<int32_t>(il), union_, recs_.data());
  // The products of the records in memory (hot segment, cache hits) first, while the misses are
  // read; then each cluster of misses as it lands. A row's product does not depend on which
  // others it is computed with, so the result is the same bits as all at once.
  batch_of_.assign(union_.size(), 1);
  for (int32_t k : store.pending()) batch_of_[k] = 0;
  up_dot_.resize(tok_ids_.size());
  gate_dot_.resize(tok_ids_.size());
  DotsFor(il, in, 1);
  // Small enough that compute starts soon after the first reads land, large enough that each
  // product call keeps the threads busy (MatMulRowPointers hands out 32 rows a task).
  constexpr size_t kClusterRecords = 64;
  for (int32_t batch = 2;; ++batch) {
    const std::span<const int32_t> landed = store.Arrived(kClusterRecords);
    if (landed.empty()) break;
    for (int32_t k : landed) batch_of_[k] = batch;
    DotsFor(il, in, batch);
  }
  failed_ids_.clear();
  const Status st = store.Finish(&failed_ids_);
  bad_.assign(union_.size(), 0);
  for (int32_t k : failed_ids_) bad_[k] = 1;
  for (int64_t t = 0; t < n; ++t) {
    const bool ok = std::none_of(&tok_ids_[tok_start_[t]], &tok_ids_[tok_start_[t + 1]],
                                 [&](int32_t id) { return bad_[pos_[id]] != 0; });
    if (ok) {
      TokenFromDots(il, t, out + t * c.n_embd);
      continue;
    }
    std::fill_n(out + t * c.n_embd, c.n_embd, 0.0f);
    if (in.failed) in.failed[t] = 1;
  }
  store.Release();
  return st;
}

void SparseFfn::DotsFor(int64_t il, const FfnInput& in, int32_t batch) {
  const ModelConfig& c = model_.config();
  const LayerWeights& l = model_.weights().layers[il];
  const LayerBundles& lb = plan_->store->layout().layers[il];
  const bool gate_in_bundle = plan_->store->layout().gate_in_bundle;
  const bool gated = plan_->policy == SparsePolicy::kPredictor;
  const TensorType gate_type = gate_in_bundle ? lb.gate_type : l.ffn_gate.type;
  for (int64_t t = 0; t < in.n; ++t) {
    // This token's neurons of the batch: their rows and where their products go.
    gate_ptrs_.clear();
    up_ptrs_.clear();
    dot_at_.clear();
    for (int32_t j = tok_start_[t]; j < tok_start_[t + 1]; ++j) {
      const int32_t id = tok_ids_[j];
      if (batch_of_[pos_[id]] != batch) continue;
      const uint8_t* rec = recs_[pos_[id]];
      up_ptrs_.push_back(rec + lb.up_offset);
      if (gated) {
        gate_ptrs_.push_back(gate_in_bundle ? rec + lb.gate_offset
                                            : static_cast<const uint8_t*>(l.ffn_gate.data) +
                                                  id * l.ffn_gate.row_stride_bytes);
      }
      dot_at_.push_back(j);
    }
    const auto k = static_cast<int64_t>(dot_at_.size());
    if (k == 0) continue;
    const float* normed = in.normed + t * c.n_embd;
    float* y = Grow(dense_out_, static_cast<size_t>(k));
    kernels::MatMulRowPointers(lb.up_type, c.n_embd, up_ptrs_.data(), k, normed, y, pool_);
    for (int64_t i = 0; i < k; ++i) up_dot_[dot_at_[i]] = y[i];
    if (gated) {
      kernels::MatMulRowPointers(gate_type, c.n_embd, gate_ptrs_.data(), k, normed, y, pool_);
      for (int64_t i = 0; i < k; ++i) gate_dot_[dot_at_[i]] = y[i];
    }
  }
}

void SparseFfn::TokenFromDots(int64_t il, int64_t t, float* out) {
  const ModelConfig& c = model_.config();
  const LayerBundles& lb = plan_->store->layout().layers[il];
  const int32_t* ids = &tok_ids_[tok_start_[t]];
  const int64_t k = tok_start_[t + 1] - tok_start_[t];
  float* u = up_dot_.data() + tok_start_[t];
  float* h = Grow(h_, static_cast<size_t>(c.n_ff));
  std::fill_n(h, c.n_ff, 0.0f);
  if (plan_->policy == SparsePolicy::kPredictor) {
    float* g = gate_dot_.data() + tok_start_[t];
    GatedActivation(c.ffn_kind, g, u, k);
    for (int64_t j = 0; j < k; ++j) h[ids[j]] = g[j];
  } else {
    // CATS: act(gate) from SelectTokens, times up, for the neurons that passed.
    const float* a = gate_.data() + t * c.n_ff;
    for (int64_t j = 0; j < k; ++j) h[ids[j]] = a[ids[j]] * u[j];
  }
  Chosen(counted_[t], ids, k);
  // Down's input rounds as in AccumulateDown (block-wise, zeros included), then the rows.
  kernels::RoundToVecDotType(lb.down_type, h, c.n_ff);
  float* alpha = Grow(alpha_, static_cast<size_t>(k));
  down_ptrs_.resize(k);
  for (int64_t j = 0; j < k; ++j) {
    alpha[j] = h[ids[j]];
    down_ptrs_[j] = recs_[pos_[ids[j]]] + lb.down_offset;
  }
  std::fill_n(out, c.n_embd, 0.0f);
  kernels::AccumulateRowPointers(lb.down_type, c.n_embd, down_ptrs_.data(), k, alpha, out, pool_);
}

void SparseFfn::Chosen(bool decoded, const int32_t* neurons, int64_t n) {
  if (observer_) observer_->OnChosen(current_layer_, neurons, n);
  if (!decoded) return;
  ++counters_.decode_tokens;
  counters_.neurons_total += model_.config().n_ff;
  counters_.neurons_computed += n;
}

void SparseFfn::CountDense(bool decoded) {
  if (!decoded) return;
  ++counters_.decode_tokens;
  counters_.neurons_total += model_.config().n_ff;
  counters_.neurons_computed += model_.config().n_ff;
}

void SparseFfn::AccumulateDown(const kernels::WeightMatrix& down_t, float* h, float* out,
                               bool decoded) {
  const ModelConfig& c = model_.config();
  const auto n_active = static_cast<int64_t>(active_.size());
  Chosen(decoded, active_.data(), n_active);
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
  AccumulateDown(plan_->down_t[il], h, out, decoded);
}

void SparseFfn::SelectByThreshold(int64_t il, float* h, const float* u) {
  const int64_t n_ff = model_.config().n_ff;
  const float threshold = level_->thresholds[il];
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
  GateActivation(c.ffn_kind, h, c.n_ff);
  if (plan_->policy == SparsePolicy::kCats) {
    // Only the neurons whose gate passes read their up rows; the rest of u is never used.
    active_.clear();
    for (int32_t i = 0; i < c.n_ff; ++i) {
      if (std::fabs(h[i]) >= level_->thresholds[il]) active_.push_back(i);
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
  AccumulateDown(plan_->down_t[il], h, out, true);
}

void SparseFfn::MixedBatch(int64_t il, const LayerWeights& l, const kernels::WeightMatrix& down_t,
                           const FfnInput& in, const float* logits, int64_t n_sparse, float* out) {
  const ModelConfig& c = model_.config();
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
      GateActivation(c.ffn_kind, gt, c.n_ff);
      SelectByThreshold(il, gt, ut);
    }
    if (dense_down) {
      Chosen(counted_[t], active_.data(), static_cast<int64_t>(active_.size()));
      std::copy_n(gt, c.n_ff, dense_in + n_dense++ * c.n_ff);
      continue;
    }
    AccumulateDown(down_t, gt, out + t * d, counted_[t]);
  }
  if (n_dense == 0) return;
  float* dense_out = Grow(dense_out_, static_cast<size_t>(n_dense * d));
  DenseDown(c, l, dense_in, n_dense, dense_out, all_rows_, pool_);
  for (int64_t t = 0, k = 0; t < n; ++t) {
    if (!sparse_[t] || dense_down) std::copy_n(dense_out + k++ * d, d, out + t * d);
  }
}

}  // namespace sparrow
