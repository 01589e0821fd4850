#include "engine/runtime/moe_ffn.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>

#include "engine/kernels/matmul.h"
#include "engine/kernels/sparse_ops.h"
#include "engine/kernels/vec_ops.h"
#include "engine/runtime/dense_ffn.h"

namespace sparrow {

void TopK(const float* probs, int64_t n, int64_t k, int32_t* out, std::vector<int32_t>& order) {
  order.resize(n);
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [probs](int32_t a, int32_t b) {
    return probs[a] > probs[b] || (probs[a] == probs[b] && a < b);
  });
  std::copy_n(order.begin(), k, out);
}

MoeFfn::MoeFfn(const Model& model, kernels::ThreadPool* pool, std::unique_ptr<ExpertSource> source)
    : model_(model), pool_(pool), source_(std::move(source)) {}

void MoeFfn::Route(const LayerWeights& l, const float* input, int64_t n) {
  const ModelConfig& c = model_.config();
  const int64_t e = c.n_expert, k = c.n_expert_used;
  probs_.resize(n * e);
  chosen_.resize(n * k);
  weights_.resize(n * k);
  kernels::MatMul(l.ffn_gate_inp, input, n, c.n_embd, probs_.data(), e, pool_);
  for (int64_t t = 0; t < n; ++t) {
    float* p = &probs_[t * e];
    if (c.expert_gating == ModelConfig::ExpertGating::kSigmoid) {
      for (int64_t i = 0; i < e; ++i) p[i] = 1.0f / (1.0f + std::exp(-p[i]));
    } else {
      kernels::SoftmaxInPlace(p, e);
    }
    int32_t* ids = &chosen_[t * k];
    float* w = &weights_[t * k];
    TopK(p, e, k, ids, order_);
    float sum = 0;
    for (int64_t j = 0; j < k; ++j) sum += (w[j] = p[ids[j]]);
    if (c.expert_weights_norm) {
      // llama.cpp clamps the sum at fp16's smallest normal number before dividing.
      sum = std::max(sum, 6.103515625e-5f);
      for (int64_t j = 0; j < k; ++j) w[j] /= sum;
    }
    if (c.expert_weights_scale != 0.0f && c.expert_weights_scale != 1.0f)
      kernels::ScaleInPlace(w, k, c.expert_weights_scale);
  }
}

void MoeFfn::ComputeExpert(const ExpertMatrices& m, int64_t e, const FfnInput& in) {
  const ModelConfig& c = model_.config();
  const int64_t d = c.n_embd, f = c.n_ff_exp, k = c.n_expert_used;
  const int32_t* group = &members_[starts_[e]];
  const int64_t rows = starts_[e + 1] - starts_[e];
  rows_in_.resize(rows * d);
  gate_.resize(rows * f);
  up_.resize(rows * f);
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(in.normed + (group[r] / k) * d, d, &rows_in_[r * d]);
  kernels::MatMul(m.gate, rows_in_.data(), rows, d, gate_.data(), f, pool_);
  if (rows == 1 && c.ffn_kind == FfnKind::kReluGlu) {
    ReluExpertOne(m, group[0]);
    return;
  }
  kernels::MatMul(m.up, rows_in_.data(), rows, d, up_.data(), f, pool_);
  GatedActivation(c.ffn_kind, gate_.data(), up_.data(), rows * f);
  if (c.ffn_kind == FfnKind::kReluGlu) {
    for (int64_t r = 0; r < rows; ++r) {
      const float* h = &gate_[r * f];
      open_count_[group[r] / k] += std::count_if(h, h + f, [](float v) { return v != 0.0f; });
    }
  }
  if (m.down_rows) {
    // Several tokens through the down rows: each token's closed neurons (zero coefficients)
    // are skipped by the accumulation.
    if (static_cast<int64_t>(all_neurons_.size()) != f) {
      all_neurons_.resize(f);
      std::iota(all_neurons_.begin(), all_neurons_.end(), 0);
    }
    for (int64_t r = 0; r < rows; ++r) kernels::RoundToVecDotType(m.down.type, &gate_[r * f], f);
    std::fill_n(rows_in_.begin(), rows * d, 0.0f);
    kernels::AccumulateRows(m.down, all_neurons_.data(), f, gate_.data(), f, rows, rows_in_.data(),
                            d, pool_);
  } else {
    // The down products land in rows_in_ (free now), then move to their (token, slot) rows.
    kernels::MatMul(m.down, gate_.data(), rows, f, rows_in_.data(), d, pool_);
  }
  for (int64_t r = 0; r < rows; ++r) std::copy_n(&rows_in_[r * d], d, &expert_out_[group[r] * d]);
}

void MoeFfn::ReluExpertOne(const ExpertMatrices& m, int32_t member) {
  const ModelConfig& c = model_.config();
  const int64_t d = c.n_embd, f = c.n_ff_exp;
  // A ReGLU neuron whose gate is not positive adds exactly nothing: only the open ones' up rows
  // are read, and their down rows when the expert holds neuron bundles.
  const float* g = gate_.data();
  open_.clear();
  for (int32_t i = 0; i < f; ++i) {
    if (g[i] > 0) open_.push_back(i);
  }
  const auto n_open = static_cast<int64_t>(open_.size());
  kernels::MatMulRows(m.up, open_.data(), n_open, rows_in_.data(), up_.data(), pool_);
  hidden_.assign(f, 0.0f);
  for (int64_t j = 0; j < n_open; ++j) hidden_[open_[j]] = g[open_[j]] * up_[j];
  open_count_[member / c.n_expert_used] += n_open;
  float* out = &expert_out_[static_cast<size_t>(member) * d];
  if (m.down_rows) {
    // Down's input rounds as the dense product would round it.
    kernels::RoundToVecDotType(m.down.type, hidden_.data(), f);
    std::fill_n(out, d, 0.0f);
    kernels::AccumulateRows(m.down, open_.data(), n_open, hidden_.data(), f, 1, out, d, pool_);
  } else {
    kernels::MatMul(m.down, hidden_.data(), 1, f, out, d, pool_);
  }
}

void MoeFfn::PrefetchNext(int64_t il, const FfnInput& in) {
  const ModelConfig& c = model_.config();
  if (il + 1 >= c.n_layer) return;
  const LayerWeights& next = model_.weights().layers[il + 1];
  const LayerBundles& lb = model_.weights().bundles->layers[il + 1];
  const int64_t d = c.n_embd, n = in.n, k = c.n_expert_used;
  // Pre-gating: the residual stream moves little across one layer, so the next router applied
  // to it now (normed as the next layer will norm it) names most of the next layer's experts.
  guess_in_.resize(n * d);
  for (int64_t t = 0; t < n; ++t) {
    const float* h = in.residual + t * d;
    if (c.arch->router_on_layer_input) {
      std::copy_n(h, d, &guess_in_[t * d]);
    } else {
      kernels::RmsNorm(h, next.ffn_norm.data(), d, c.rms_eps, &guess_in_[t * d]);
    }
  }
  guess_.resize(n * c.n_expert);
  kernels::MatMul(next.ffn_gate_inp, guess_in_.data(), n, d, guess_.data(), c.n_expert, pool_);
  picks_.resize(n * k);
  // Softmax and sigmoid keep the order of the logits: the top k of the logits are the guess.
  for (int64_t t = 0; t < n; ++t)
    TopK(&guess_[t * c.n_expert], c.n_expert, k, &picks_[t * k], order_);
  for (int32_t& e : picks_) e = lb.record_of[e];
  std::sort(picks_.begin(), picks_.end());
  picks_.erase(std::unique(picks_.begin(), picks_.end()), picks_.end());
  source_->Prefetch(static_cast<int32_t>(il + 1), picks_);
}

Status MoeFfn::ComputeFromSource(int64_t il, const FfnInput& in) {
  const ModelConfig& c = model_.config();
  const LayerBundles& lb = model_.weights().bundles->layers[il];
  const int64_t k = c.n_expert_used;
  // The chosen experts' records in file order: adjacent hot records are read together.
  records_.clear();
  for (int64_t e = 0; e < c.n_expert; ++e) {
    if (starts_[e + 1] > starts_[e]) records_.push_back(lb.record_of[e]);
  }
  std::sort(records_.begin(), records_.end());
  expert_of_.resize(records_.size());
  for (size_t r = 0; r < records_.size(); ++r) expert_of_[r] = lb.neuron_ids[records_[r]];
  bool decode_only = in.decode != nullptr;
  for (int64_t t = 0; t < in.n && decode_only; ++t) decode_only = in.decode[t] != 0;

  Status first;
  const size_t step = std::max<size_t>(1, source_->max_records());
  for (size_t r0 = 0; r0 < records_.size(); r0 += step) {
    const size_t len = std::min(step, records_.size() - r0);
    source_->Start(static_cast<int32_t>(il), std::span<const int32_t>(&records_[r0], len));
    // Decode steps read the next layer's likely experts behind this layer's reads.
    if (r0 == 0 && decode_only && source_->reads_ahead()) PrefetchNext(il, in);
    for (auto ready = source_->Ready(); !ready.empty(); ready = source_->Ready()) {
      for (int32_t j : ready) {
        ComputeExpert(RecordExpert(c, lb, source_->Record(j)), expert_of_[r0 + j], in);
      }
    }
    failed_.clear();
    Status st = source_->Finish(&failed_);
    source_->Release();
    if (!st.ok() && first.ok()) first = std::move(st);
    for (int32_t j : failed_) {
      const int64_t e = expert_of_[r0 + j];
      for (int64_t i = starts_[e]; i < starts_[e + 1]; ++i) {
        const int64_t t = members_[i] / k;
        if (in.failed) in.failed[t] = 1;
        failed_tokens_[t] = 1;
      }
    }
  }
  return first;
}

Status MoeFfn::Compute(int64_t il, const FfnInput& in, float* out) {
  const ModelConfig& c = model_.config();
  const ModelWeights& w = model_.weights();
  const LayerWeights& l = w.layers[il];
  const int64_t n = in.n, d = c.n_embd, f = c.n_ff_exp, k = c.n_expert_used;
  Route(l, in.layer_input ? in.layer_input : in.normed, n);
  if (observer_) observer_->OnRouted(il, in, chosen_.data());

  // Each chosen (token, slot) pair's expert output, computed expert by expert.
  expert_out_.resize(n * k * d);
  // The (token, slot) pairs grouped by expert in one pass (a counting sort), not one scan per
  // expert: a 128-expert model would otherwise scan the batch 128 times per layer.
  starts_.assign(c.n_expert + 1, 0);
  for (int64_t i = 0; i < n * k; ++i) ++starts_[chosen_[i] + 1];
  for (int64_t e = 0; e < c.n_expert; ++e) starts_[e + 1] += starts_[e];
  members_.resize(n * k);
  order_.assign(starts_.begin(), starts_.end() - 1);  // each expert's next free place
  for (int64_t i = 0; i < n * k; ++i) members_[order_[chosen_[i]]++] = static_cast<int32_t>(i);
  failed_tokens_.assign(n, 0);
  open_count_.assign(n, 0);
  Status st;
  if (source_) {
    st = ComputeFromSource(il, in);
  } else {
    for (int64_t e = 0; e < c.n_expert; ++e) {
      if (starts_[e + 1] == starts_[e]) continue;
      if (w.bundles) {
        const LayerBundles& lb = w.bundles->layers[il];
        const uint8_t* rec = lb.records + static_cast<size_t>(lb.record_of[e]) * lb.record_bytes;
        ComputeExpert(RecordExpert(c, lb, rec), e, in);
      } else {
        ComputeExpert(StackedExpert(c, l, e), e, in);
      }
    }
  }
  // Weighted sum in slot order, as llama.cpp adds its expert views one after the other.
  for (int64_t t = 0; t < n; ++t) {
    float* o = out + t * d;
    if (failed_tokens_[t]) {  // an expert it needed could not be read
      std::fill_n(o, d, 0.0f);
      continue;
    }
    for (int64_t j = 0; j < k; ++j) {
      const float wgt = weights_[t * k + j];
      const float* x = &expert_out_[(t * k + j) * d];
      if (j == 0) {
        for (int64_t i = 0; i < d; ++i) o[i] = x[i] * wgt;
      } else {
        for (int64_t i = 0; i < d; ++i) o[i] += x[i] * wgt;
      }
    }
    if (in.decode != nullptr && in.decode[t] != 0) {
      ++counters_.decode_tokens;
      counters_.neurons_total += c.n_expert * f;
      counters_.neurons_computed += c.ffn_kind == FfnKind::kReluGlu ? open_count_[t] : k * f;
    }
  }
  return st;
}

}  // namespace sparrow
