#include "engine/runtime/tensor_slice.h"

#include <cmath>
#include <cstring>
#include <numeric>

#include "engine/kernels/vec_dot.h"
#include "engine/model/model_weights.h"

namespace sparrow {

namespace {

// Columns of `m` must be cut on this many: its blocks and those of its activations.
int64_t ColumnGrain(const kernels::WeightMatrix& m) {
  const int64_t own = GetTensorTypeTraits(m.type)->block_elems;
  const int64_t act = GetTensorTypeTraits(kernels::VecDotType(m.type))->block_elems;
  return std::lcm(own, act);
}

// The smallest multiple of `unit` things whose `width` columns are a multiple of `grain`.
int64_t Steps(int64_t unit_width, int64_t grain) {
  return grain / std::gcd(unit_width, grain);
}

// Columns [first, first + n) of m, copied into `bytes`.
kernels::WeightMatrix Columns(const kernels::WeightMatrix& m, int64_t first, int64_t n,
                              std::vector<uint8_t>& bytes) {
  const auto traits = *GetTensorTypeTraits(m.type);
  const size_t offset = static_cast<size_t>(first / traits.block_elems) * traits.block_bytes;
  const size_t row_bytes = static_cast<size_t>(n / traits.block_elems) * traits.block_bytes;
  bytes.resize(row_bytes * static_cast<size_t>(m.rows));
  const auto* src = static_cast<const uint8_t*>(m.data);
  for (int64_t r = 0; r < m.rows; ++r) {
    std::memcpy(&bytes[static_cast<size_t>(r) * row_bytes],
                src + static_cast<size_t>(r) * m.row_stride_bytes + offset, row_bytes);
  }
  return {m.type, bytes.data(), n, m.rows, row_bytes};
}

std::vector<float> Part(const std::vector<float>& v, int64_t first, int64_t n) {
  if (v.empty()) return {};
  return {v.begin() + first, v.begin() + first + n};
}

}  // namespace

std::string TensorSlice::ToString() const {
  auto range = [](int64_t b, int64_t e) {
    return b == e ? std::string("none") : std::to_string(b) + ".." + std::to_string(e - 1);
  };
  return "kv heads " + range(kv_head_begin, kv_head_end) + ", neurons " + range(ff_begin, ff_end);
}

Result<SliceGrain> TensorSplitGrain(const Model& model, int64_t first, int64_t end) {
  const ModelConfig& c = model.config();
  if (first < 0 || first >= end || end > c.n_layer) {
    return InvalidArgument("layers " + std::to_string(first) + ".." + std::to_string(end - 1) +
                           " fall outside the model's " + std::to_string(c.n_layer) + " layers");
  }
  if (c.arch->qk_norm_whole) {
    return Unsupported(std::string(c.arch->name) +
                       ": one norm over all heads' queries and keys needs every head on one "
                       "device; the tensor split cannot cut its layers");
  }
  const int64_t group = c.n_head / c.n_head_kv;
  SliceGrain g;
  for (int64_t il = first; il < end; ++il) {
    const LayerWeights& l = model.weights().layers[il];
    const std::string where = "layer " + std::to_string(il);
    if (l.ffn_gate_inp.data != nullptr) {
      return Unsupported(where +
                         " routes tokens to experts; the tensor split cuts dense FFNs only "
                         "(place expert layers whole)");
    }
    if (l.ffn_down.data == nullptr || l.ffn_gate.data == nullptr) {
      return Unsupported(where +
                         " has no row-major down projection (a PowerInfer or neuron-bundle "
                         "file); the tensor split needs the model's own GGUF");
    }
    g.kv_heads = std::lcm(g.kv_heads, Steps(group * c.head_dim, ColumnGrain(l.wo)));
    g.neurons = std::lcm(g.neurons, ColumnGrain(l.ffn_down));
  }
  return g;
}

Status CheckSlice(const Model& model, int64_t first, int64_t end, const TensorSlice& s) {
  SPARROW_ASSIGN_OR_RETURN(SliceGrain g, TensorSplitGrain(model, first, end));
  const ModelConfig& c = model.config();
  auto check = [](const char* what, int64_t b, int64_t e, int64_t total, int64_t grain) -> Status {
    if (b < 0 || b > e || e > total) {
      return InvalidArgument(std::string(what) + " " + std::to_string(b) + ".." +
                             std::to_string(e) + " fall outside 0.." + std::to_string(total));
    }
    for (int64_t v : {b, e}) {
      if (v % grain != 0 && v != total) {
        return InvalidArgument(std::string(what) + " bound " + std::to_string(v) +
                               " is not a multiple of " + std::to_string(grain) +
                               " (the weights' blocks)");
      }
    }
    return Status::Ok();
  };
  SPARROW_RETURN_IF_ERROR(
      check("kv heads", s.kv_head_begin, s.kv_head_end, c.n_head_kv, g.kv_heads));
  return check("neurons", s.ff_begin, s.ff_end, c.n_ff, g.neurons);
}

Result<std::vector<SlicedLayer>> SliceLayers(const Model& model, int64_t first, int64_t end,
                                             const TensorSlice& s) {
  SPARROW_RETURN_IF_ERROR(CheckSlice(model, first, end, s));
  const ModelConfig& c = model.config();
  const int64_t hd = c.head_dim, group = c.n_head / c.n_head_kv;
  const int64_t q0 = s.kv_head_begin * group * hd, qn = s.kv_heads() * group * hd;
  const int64_t k0 = s.kv_head_begin * hd, kn = s.kv_heads() * hd;
  std::vector<SlicedLayer> out(static_cast<size_t>(end - first));
  for (int64_t il = first; il < end; ++il) {
    const LayerWeights& l = model.weights().layers[il];
    SlicedLayer& o = out[static_cast<size_t>(il - first)];
    o.wq = RowRange(l.wq, q0, qn);
    o.wk = RowRange(l.wk, k0, kn);
    o.wv = RowRange(l.wv, k0, kn);
    o.bq = Part(l.bq, q0, qn);
    o.bk = Part(l.bk, k0, kn);
    o.bv = Part(l.bv, k0, kn);
    if (qn > 0) o.wo = Columns(l.wo, q0, qn, o.wo_bytes);
    o.gate = RowRange(l.ffn_gate, s.ff_begin, s.neurons());
    o.up = RowRange(l.ffn_up, s.ff_begin, s.neurons());
    if (s.neurons() > 0) o.down = Columns(l.ffn_down, s.ff_begin, s.neurons(), o.down_bytes);
  }
  return out;
}

Result<std::vector<TensorSlice>> CutSlices(const Model& model, int64_t first, int64_t end,
                                           std::span<const double> shares) {
  SPARROW_ASSIGN_OR_RETURN(SliceGrain g, TensorSplitGrain(model, first, end));
  double total = 0;
  for (double s : shares) {
    if (!(s > 0) || !std::isfinite(s)) {
      return InvalidArgument("a device's share of the tensor split must be positive");
    }
    total += s;
  }
  if (shares.empty()) return InvalidArgument("a tensor split over no device");
  const ModelConfig& c = model.config();
  // Bound i: the cumulative share rounded to the grain; the last bound is the whole.
  auto bounds = [&](int64_t whole, int64_t grain) {
    std::vector<int64_t> b(shares.size() + 1, 0);
    double acc = 0;
    for (size_t i = 0; i < shares.size(); ++i) {
      acc += shares[i];
      const auto units = static_cast<int64_t>(std::llround(acc / total * (whole / grain)));
      b[i + 1] = i + 1 == shares.size() ? whole : std::max(b[i], units * grain);
    }
    return b;
  };
  const auto heads = bounds(c.n_head_kv, g.kv_heads), ff = bounds(c.n_ff, g.neurons);
  std::vector<TensorSlice> out(shares.size());
  for (size_t i = 0; i < shares.size(); ++i) out[i] = {heads[i], heads[i + 1], ff[i], ff[i + 1]};
  return out;
}

}  // namespace sparrow
