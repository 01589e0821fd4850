// ForwardPass's part of Galaxy's tensor split: a layer cut between this device and sliced
// remote devices, and a sliced worker's part of a layer.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "engine/kernels/matmul.h"
#include "engine/kernels/vec_ops.h"
#include "engine/runtime/dense_ffn.h"
#include "engine/runtime/forward_pass.h"

namespace sparrow {

namespace {

// A part's tokens go to the workers in chunks of at least this many, at most kMaxSplitChunks.
constexpr int64_t kSplitChunkTokens = 4;
constexpr int64_t kMaxSplitChunks = 4;

using Interval = std::pair<int64_t, int64_t>;

// The one run of [0, total) that `taken` (disjoint runs) leave; empty when they take it all.
Result<Interval> Left(std::vector<Interval> taken, int64_t total, const std::string& what) {
  std::sort(taken.begin(), taken.end());
  std::optional<Interval> gap;
  int64_t at = 0;
  auto leave = [&](int64_t b, int64_t e) -> Status {
    if (gap) {
      return InvalidArgument("the workers' slices leave " + what + " " +
                             std::to_string(gap->first) + ".." + std::to_string(gap->second - 1) +
                             " and " + std::to_string(b) + ".." + std::to_string(e - 1) +
                             " to this device: its slice must be one run");
    }
    gap = Interval{b, e};
    return Status::Ok();
  };
  for (const auto& [b, e] : taken) {
    if (b == e) continue;
    if (b < at) {
      return InvalidArgument("two workers' slices share " + what + " " + std::to_string(b) + ".." +
                             std::to_string(std::min(at, e) - 1));
    }
    if (b > at) SPARROW_RETURN_IF_ERROR(leave(at, b));
    at = e;
  }
  if (at < total) SPARROW_RETURN_IF_ERROR(leave(at, total));
  return gap ? *gap : Interval{total, total};
}

}  // namespace

Result<std::unique_ptr<ForwardPass::SplitGroup>> ForwardPass::MakeSplitGroup(
    std::span<RemoteLayers* const> sliced) const {
  auto g = std::make_unique<SplitGroup>();
  g->first = sliced[0]->first_layer();
  g->end = sliced[0]->end_layer();
  std::vector<Interval> heads, neurons;
  for (RemoteLayers* r : sliced) {
    if (r->first_layer() != g->first || r->end_layer() != g->end) {
      return InvalidArgument(r->name() + " is given a slice of layers " +
                             std::to_string(r->first_layer()) + ".." +
                             std::to_string(r->end_layer() - 1) + ", another worker of " +
                             std::to_string(g->first) + ".." + std::to_string(g->end - 1) +
                             ": the devices of a tensor split share one range of layers");
    }
    const TensorSlice& s = *r->slice();
    if (Status st = CheckSlice(model_, g->first, g->end, s); !st.ok()) {
      return InvalidArgument(r->name() + ": " + st.message());
    }
    heads.emplace_back(s.kv_head_begin, s.kv_head_end);
    neurons.emplace_back(s.ff_begin, s.ff_end);
    g->remotes.push_back(r);
  }
  SPARROW_ASSIGN_OR_RETURN(Interval h, Left(heads, c_.n_head_kv, "kv heads"));
  SPARROW_ASSIGN_OR_RETURN(Interval ff, Left(neurons, c_.n_ff, "neurons"));
  g->local = {h.first, h.second, ff.first, ff.second};
  SPARROW_ASSIGN_OR_RETURN(g->layers, SliceLayers(model_, g->first, g->end, g->local));
  g->parts.resize(g->remotes.size());
  return g;
}

void ForwardPass::SliceAttention(int64_t il, const SlicedLayer& w, const TensorSlice& s, Flight& f,
                                 int64_t t_first, int64_t n, std::span<const Segment> segments,
                                 const float* in, float* out) {
  if (s.kv_heads() == 0) {
    std::fill_n(out, n * c_.n_embd, 0.0f);
    return;
  }
  const int64_t group = c_.n_head / c_.n_head_kv;
  Attention(il,
            {s.kv_heads() * group, s.kv_heads(), &w.wq, &w.wk, &w.wv, &w.wo, &w.bq, &w.bk, &w.bv},
            f, t_first, n, segments, in, out);
}

void ForwardPass::SliceFfn(const SlicedLayer& w, const TensorSlice& s, int64_t n, const float* in,
                           float* out) {
  const int64_t d = c_.n_embd, nf = s.neurons();
  if (nf == 0) {
    std::fill_n(out, n * d, 0.0f);
    return;
  }
  if (slice_gate_.size() < static_cast<size_t>(n * nf)) {
    slice_gate_.resize(n * nf);
    slice_up_.resize(n * nf);
  }
  kernels::MatMul(w.gate, in, n, d, slice_gate_.data(), nf, pool_);
  kernels::MatMul(w.up, in, n, d, slice_up_.data(), nf, pool_);
  GatedActivation(c_.ffn_kind, slice_gate_.data(), slice_up_.data(), n * nf);
  kernels::MatMul(w.down, slice_gate_.data(), n, nf, out, d, pool_);
}

void ForwardPass::SplitLayer(int64_t il, Flight& f, int64_t t_first, int64_t n,
                             std::span<const Segment> segments) {
  // After a remote failure the batch is lost: the rest of its layers are not worth computing.
  if (f.split_failed) return;
  SplitGroup& g = *split_;
  const LayerWeights& l = model_.weights().layers[il];
  const SlicedLayer& w = g.layers[static_cast<size_t>(il - g.first)];
  const int64_t d = c_.n_embd;
  float* x = &f.x[t_first * d];
  // Galaxy overlaps the exchanges with the compute: a part's tokens go out in chunks, so that a
  // worker computes one chunk while the next is on the wire and the one before comes back.
  CutTokens(segments, n, std::clamp<int64_t>(n / kSplitChunkTokens, 1, kMaxSplitChunks), g.chunks);
  const size_t size = static_cast<size_t>(n * d);
  // One part (attention or FFN): the normed input in xn_ goes to every remote slice, this
  // device computes its own meanwhile, and the partial sums are added in device order.
  std::vector<size_t>& started = g.started;
  auto part = [&](LayerPart kind, const std::vector<float>& post_norm) {
    started.assign(g.remotes.size(), 0);
    Status st;
    for (auto& p : g.parts) p.assign(xn_.begin(), xn_.begin() + static_cast<std::ptrdiff_t>(size));
    for (const MicroBatch& c : g.chunks) {
      StageSegments(c.segments);
      for (size_t i = 0; i < g.remotes.size() && st.ok(); ++i) {
        st = g.remotes[i]->StartPart(
            kind, il, stage_segments_, d,
            {&g.parts[i][static_cast<size_t>(c.t_first * d)], static_cast<size_t>(c.n * d)});
        if (st.ok()) ++started[i];
      }
    }
    if (!st.ok()) {
      // Those already started still answer, in order, before the batch fails.
      for (size_t i = 0; i < g.remotes.size(); ++i) {
        for (size_t k = 0; k < started[i]; ++k) (void)g.remotes[i]->Finish();
      }
      if (remote_error_.ok()) remote_error_ = st;
      f.split_failed = true;
      return;
    }
    if (kind == LayerPart::kAttention) {
      SliceAttention(il, w, g.local, f, t_first, n, segments, xn_.data(), ffn_out_.data());
    } else {
      SliceFfn(w, g.local, n, xn_.data(), ffn_out_.data());
    }
    for (size_t k = 0; k < g.chunks.size(); ++k) {
      for (size_t i = 0; i < g.remotes.size(); ++i) {
        if (Status fin = g.remotes[i]->Finish(); !fin.ok()) {
          if (remote_error_.ok()) remote_error_ = fin;
          f.split_failed = true;
        }
      }
    }
    if (f.split_failed) return;
    for (const auto& p : g.parts) kernels::AddInPlace(ffn_out_.data(), p.data(), n * d);
    if (!post_norm.empty())
      kernels::RmsNormRows(ffn_out_.data(), n, d, post_norm.data(), c_.rms_eps);
    kernels::AddInPlace(x, ffn_out_.data(), n * d);
  };
  for (int64_t t = 0; t < n; ++t)
    kernels::RmsNorm(&x[t * d], l.attn_norm.data(), d, c_.rms_eps, &xn_[t * d]);
  part(LayerPart::kAttention, l.attn_post_norm);
  if (f.split_failed) return;
  for (int64_t t = 0; t < n; ++t)
    kernels::RmsNorm(&x[t * d], l.ffn_norm.data(), d, c_.rms_eps, &xn_[t * d]);
  part(LayerPart::kFfn, l.ffn_post_norm);
}

Status ForwardPass::RunSlicePart(std::span<const Segment> segments, LayerPart part, int64_t il,
                                 const SlicedLayer& w, const TensorSlice& s,
                                 std::span<float> hidden) {
  if (il < 0 || il >= c_.n_layer) {
    return InvalidArgument("layer " + std::to_string(il) + " is outside the model's " +
                           std::to_string(c_.n_layer) + " layers");
  }
  if (part != LayerPart::kAttention && part != LayerPart::kFfn) {
    return InvalidArgument("a slice computes a layer's attention or its FFN, not whole layers");
  }
  Flight& f = worker_flight_;
  SPARROW_RETURN_IF_ERROR(Prepare(segments, f));
  const size_t size = static_cast<size_t>(f.n * c_.n_embd);
  if (hidden.size() != size) {
    return InvalidArgument("hidden state of " + std::to_string(hidden.size()) + " floats for " +
                           std::to_string(f.n) + " tokens of " + std::to_string(c_.n_embd));
  }
  std::copy(hidden.begin(), hidden.end(), xn_.begin());
  if (part == LayerPart::kAttention) {
    SliceAttention(il, w, s, f, 0, f.n, segments, xn_.data(), ffn_out_.data());
  } else {
    SliceFfn(w, s, f.n, xn_.data(), ffn_out_.data());
  }
  std::copy_n(ffn_out_.begin(), size, hidden.begin());
  return Status::Ok();
}

}  // namespace sparrow
