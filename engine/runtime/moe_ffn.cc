#include "engine/runtime/moe_ffn.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/kernels/matmul.h"
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

MoeFfn::MoeFfn(const Model& model, kernels::ThreadPool* pool) : model_(model), pool_(pool) {}

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

Status MoeFfn::Compute(int64_t il, const FfnInput& in, float* out) {
  const ModelConfig& c = model_.config();
  const LayerWeights& l = model_.weights().layers[il];
  const int64_t n = in.n, d = c.n_embd, f = c.n_ff_exp, k = c.n_expert_used;
  Route(l, in.layer_input ? in.layer_input : in.normed, n);

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
  for (int64_t e = 0; e < c.n_expert; ++e) {
    const int32_t* group = &members_[starts_[e]];
    const int64_t m = starts_[e + 1] - starts_[e];
    if (m == 0) continue;
    rows_in_.resize(m * d);
    gate_.resize(m * f);
    up_.resize(m * f);
    for (int64_t r = 0; r < m; ++r)
      std::copy_n(in.normed + (group[r] / k) * d, d, &rows_in_[r * d]);
    kernels::MatMul(ExpertRows(l.ffn_gate_exps, e, f), rows_in_.data(), m, d, gate_.data(), f,
                    pool_);
    kernels::MatMul(ExpertRows(l.ffn_up_exps, e, f), rows_in_.data(), m, d, up_.data(), f, pool_);
    GatedActivation(c.ffn_kind, gate_.data(), up_.data(), m * f);
    // The down products land in rows_in_ (free now), then move to their (token, slot) rows.
    kernels::MatMul(ExpertRows(l.ffn_down_exps, e, d), gate_.data(), m, f, rows_in_.data(), d,
                    pool_);
    for (int64_t r = 0; r < m; ++r) std::copy_n(&rows_in_[r * d], d, &expert_out_[group[r] * d]);
  }
  // Weighted sum in slot order, as llama.cpp adds its expert views one after the other.
  for (int64_t t = 0; t < n; ++t) {
    float* o = out + t * d;
    for (int64_t j = 0; j < k; ++j) {
      const float w = weights_[t * k + j];
      const float* x = &expert_out_[(t * k + j) * d];
      if (j == 0) {
        for (int64_t i = 0; i < d; ++i) o[i] = x[i] * w;
      } else {
        for (int64_t i = 0; i < d; ++i) o[i] += x[i] * w;
      }
    }
    if (in.decode != nullptr && in.decode[t] != 0) {
      ++counters_.decode_tokens;
      counters_.neurons_total += c.n_expert * f;
      counters_.neurons_computed += k * f;
    }
  }
  return Status::Ok();
}

}  // namespace sparrow
