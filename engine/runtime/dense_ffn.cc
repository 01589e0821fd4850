#include "engine/runtime/dense_ffn.h"

#include <algorithm>
#include <numeric>

#include "engine/common/check.h"
#include "engine/kernels/matmul.h"
#include "engine/kernels/sparse_ops.h"
#include "engine/kernels/vec_ops.h"

namespace sparrow {

void GatedActivation(FfnKind kind, float* gate, const float* up, int64_t n) {
  switch (kind) {
    case FfnKind::kSwiGlu:
      kernels::SwiGlu(gate, up, n, gate);
      return;
    case FfnKind::kReluGlu:
      for (int64_t i = 0; i < n; ++i) gate[i] = gate[i] > 0.0f ? gate[i] * up[i] : 0.0f;
      return;
    case FfnKind::kDReluGlu:
      for (int64_t i = 0; i < n; ++i)
        gate[i] = gate[i] > 0.0f && up[i] > 0.0f ? gate[i] * up[i] : 0.0f;
      return;
    case FfnKind::kGeGlu:
      kernels::GeGlu(gate, up, n, gate);
      return;
    case FfnKind::kGelu:  // no gate: h = gelu(up)
      kernels::Gelu(up, n, gate);
      return;
  }
}

void GateActivation(FfnKind kind, float* gate, int64_t n) {
  SPARROW_CHECK(kind == FfnKind::kSwiGlu || kind == FfnKind::kGeGlu);
  if (kind == FfnKind::kGeGlu) {
    kernels::Gelu(gate, n, gate);
  } else {
    kernels::Silu(gate, n, gate);
  }
}

void DenseDown(const ModelConfig& c, const LayerWeights& l, float* h, int64_t n, float* out,
               std::vector<int32_t>& all_rows, kernels::ThreadPool* pool) {
  if (l.ffn_down.data != nullptr) {
    kernels::MatMul(l.ffn_down, h, n, c.n_ff, out, c.n_embd, pool);
    return;
  }
  if (static_cast<int64_t>(all_rows.size()) != c.n_ff) {
    all_rows.resize(c.n_ff);
    std::iota(all_rows.begin(), all_rows.end(), 0);
  }
  for (int64_t t = 0; t < n; ++t)
    kernels::RoundToVecDotType(l.ffn_down_t.type, h + t * c.n_ff, c.n_ff);
  std::fill_n(out, n * c.n_embd, 0.0f);
  kernels::AccumulateRows(l.ffn_down_t, all_rows.data(), c.n_ff, h, c.n_ff, n, out, c.n_embd, pool);
}

DenseFfn::DenseFfn(const Model& model, kernels::ThreadPool* pool) : model_(model), pool_(pool) {}

Status DenseFfn::Compute(int64_t il, const FfnInput& in, float* out) {
  ComputeLayer(il, model_.weights().layers[il], in, out);
  return Status::Ok();
}

void DenseFfn::ComputeLayer(int64_t il, const LayerWeights& l, const FfnInput& in, float* out) {
  const ModelConfig& c = model_.config();
  const float* normed = in.normed;
  const int64_t n = in.n;
  const size_t size = static_cast<size_t>(n * c.n_ff);
  if (gate_.size() < size) gate_.resize(size);
  if (up_.size() < size) up_.resize(size);
  const bool gated = c.ffn_kind != FfnKind::kGelu;
  if (gated) kernels::MatMul(l.ffn_gate, normed, n, c.n_embd, gate_.data(), c.n_ff, pool_);
  kernels::MatMul(l.ffn_up, normed, n, c.n_embd, up_.data(), c.n_ff, pool_);
  if (!l.ffn_up_b.empty()) kernels::AddToRows(up_.data(), n, c.n_ff, l.ffn_up_b.data());
  if (observer_ && gated) observer_->OnPreActivations(il, in, gate_.data(), up_.data());
  GatedActivation(c.ffn_kind, gate_.data(), up_.data(), n * c.n_ff);
  DenseDown(c, l, gate_.data(), n, out, all_rows_, pool_);
  if (!l.ffn_down_b.empty()) kernels::AddToRows(out, n, c.n_embd, l.ffn_down_b.data());
  for (int64_t t = 0; in.decode != nullptr && t < n; ++t) {
    if (in.decode[t] == 0) continue;
    ++counters_.decode_tokens;
    counters_.neurons_total += c.n_ff;
    counters_.neurons_computed += c.n_ff;
  }
}

}  // namespace sparrow
