#include "engine/runtime/forward_pass.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/common/check.h"
#include "engine/kernels/matmul.h"
#include "engine/kernels/thread_pool.h"
#include "engine/kernels/vec_ops.h"
#include "engine/runtime/attention.h"

namespace sparrow {

namespace {

RopeParams RopeFor(const ModelConfig& c, const ModelWeights& w, bool swa) {
  RopeParams p;
  p.n_rot = c.n_rot;
  p.freq_base = swa ? c.rope_freq_base_swa : c.rope_freq_base;
  p.freq_scale = swa ? c.rope_freq_scale_swa : c.rope_freq_scale;
  p.freq_factors = w.rope_freqs;
  p.ext_factor = c.rope_ext_factor;
  p.attn_factor = c.rope_attn_factor;
  p.beta_fast = c.rope_beta_fast;
  p.beta_slow = c.rope_beta_slow;
  p.n_ctx_orig = c.rope_n_ctx_orig;
  return p;
}

}  // namespace

ForwardPass::ForwardPass(const Model& model, kernels::ThreadPool* pool,
                         std::unique_ptr<FeedForward> ffn)
    : model_(model),
      c_(model.config()),
      pool_(pool),
      rope_(RopeFor(c_, model.weights(), false)),
      rope_swa_(RopeFor(c_, model.weights(), true)),
      ffn_(std::move(ffn)) {
  SPARROW_CHECK(ffn_ != nullptr);
}

ForwardPass::~ForwardPass() = default;

uint64_t ForwardPass::scratch_bytes() const {
  uint64_t bytes =
      ffn_->scratch_bytes() + CapacityBytes(xn_, q_, k_, v_, att_, ffn_out_, attn_scratch_,
                                            layer_in_, slice_gate_, slice_up_);
  auto flight = [&bytes](const Flight& f) {
    bytes += CapacityBytes(f.x, f.cos, f.sin, f.cos_swa, f.sin_swa, f.decode, f.failed);
  };
  for (const auto& f : flights_) flight(*f);
  for (const auto& f : spare_) flight(*f);
  flight(worker_flight_);
  return bytes;
}

void ForwardPass::ReleaseScratch() {
  SPARROW_CHECK(flights_.empty());
  ffn_->ReleaseScratch();
  ReleaseVectors(xn_, q_, k_, v_, att_, ffn_out_, attn_scratch_, layer_in_, slice_gate_, slice_up_);
  spare_.clear();
  Flight& w = worker_flight_;
  ReleaseVectors(w.x, w.cos, w.sin, w.cos_swa, w.sin_swa, w.decode, w.failed);
}

void ForwardPass::Resize(int64_t n) {
  auto grow = [](std::vector<float>& v, int64_t size) {
    if (v.size() < static_cast<size_t>(size)) v.resize(size);
  };
  grow(xn_, n * c_.n_embd);
  grow(q_, n * c_.q_dim());
  grow(k_, n * c_.kv_dim());
  grow(v_, n * c_.kv_dim());
  grow(att_, n * c_.q_dim());
  grow(ffn_out_, n * c_.n_embd);
}

Status ForwardPass::Run(std::span<const int32_t> tokens, int64_t start_pos, KvCache& cache,
                        bool all_logits, std::vector<float>* logits) {
  const Segment seg{&cache, tokens, start_pos, all_logits};
  return RunBatch({&seg, 1}, logits);
}

Status ForwardPass::Prepare(std::span<const Segment> segments, Flight& f) {
  int64_t n = 0, rows = 0, hidden_rows = 0;
  for (const Segment& sg : segments) {
    const int64_t len = static_cast<int64_t>(sg.tokens.size());
    if (len == 0 || sg.cache == nullptr) return InvalidArgument("no tokens to evaluate");
    if (sg.start_pos < 0 || sg.start_pos + len > sg.cache->capacity()) {
      return OutOfRange("positions " + std::to_string(sg.start_pos) + ".." +
                        std::to_string(sg.start_pos + len - 1) + " exceed the context of " +
                        std::to_string(sg.cache->capacity()) + " tokens");
    }
    SPARROW_RETURN_IF_ERROR(CheckKvTypes(sg.cache->types(), c_.head_dim));
    if (c_.arch->encoder) SPARROW_RETURN_IF_ERROR(CheckEncoderSegment(sg));
    if (!sg.hidden && !model_.weights().has_output()) {
      return InvalidArgument(
          "the model has no output head (an embedding model): it computes "
          "hidden states, not logits");
    }
    for (int32_t id : sg.tokens) {
      if (id < 0 || id >= c_.n_vocab) {
        return OutOfRange("token id " + std::to_string(id) + " is outside the vocabulary of " +
                          std::to_string(c_.n_vocab));
      }
    }
    n += len;
    (sg.hidden ? hidden_rows : rows) += sg.all_logits ? len : 1;
  }
  if (n == 0) return InvalidArgument("no tokens to evaluate");
  Resize(n);
  f.segments.assign(segments.begin(), segments.end());
  f.n = n;
  f.rows = rows;
  f.hidden_rows = hidden_rows;
  const int64_t half = c_.n_rot / 2;
  f.x.resize(static_cast<size_t>(n * c_.n_embd));
  f.cos.resize(static_cast<size_t>(n * half));
  f.sin.resize(static_cast<size_t>(n * half));
  if (!c_.swa_layers.empty()) {
    f.cos_swa.resize(static_cast<size_t>(n * half));
    f.sin_swa.resize(static_cast<size_t>(n * half));
  }
  f.decode.clear();
  for (const Segment& sg : segments)
    f.decode.resize(f.decode.size() + sg.tokens.size(), sg.tokens.size() == 1);
  int64_t t0 = 0;
  for (const Segment& sg : segments) {
    const int64_t len = static_cast<int64_t>(sg.tokens.size());
    for (int64_t t = 0; t < len; ++t) {
      rope_.Compute(sg.start_pos + t, &f.cos[(t0 + t) * half], &f.sin[(t0 + t) * half]);
      if (!c_.swa_layers.empty()) {
        rope_swa_.Compute(sg.start_pos + t, &f.cos_swa[(t0 + t) * half],
                          &f.sin_swa[(t0 + t) * half]);
      }
    }
    t0 += len;
  }
  f.failed.assign(static_cast<size_t>(n), 0);
  f.ffn_error = Status::Ok();
  f.split_failed = false;
  f.micro.clear();
  return Status::Ok();
}

Status ForwardPass::SetRemoteLayers(std::vector<std::shared_ptr<RemoteLayers>> ranges,
                                    int64_t micro_batches) {
  if (!flights_.empty()) return Internal("remote layers changed with batches in flight");
  if (c_.arch->encoder && !ranges.empty()) {
    return Unsupported("remote layers for the encoder architecture '" + std::string(c_.arch->name) +
                       "'");
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const auto& a, const auto& b) { return a->first_layer() < b->first_layer(); });
  std::vector<RemoteLayers*> whole, sliced;
  for (const auto& r : ranges) (r->slice() ? sliced : whole).push_back(r.get());
  std::unique_ptr<SplitGroup> split;
  if (!sliced.empty()) {
    SPARROW_ASSIGN_OR_RETURN(split, MakeSplitGroup(sliced));
  }
  int64_t prev_end = 0;
  for (const RemoteLayers* r : whole) {
    const int64_t first = r->first_layer(), end = r->end_layer();
    const bool on_split = split && first < split->end && split->first < end;
    if (first < prev_end || first >= end || end > c_.n_layer || on_split) {
      return InvalidArgument("remote layers " + std::to_string(first) + ".." +
                             std::to_string(end - 1) + " (" + r->name() +
                             ") overlap another range or fall outside the model's " +
                             std::to_string(c_.n_layer) + " layers");
    }
    prev_end = end;
  }
  if (micro_batches < 0) {
    return InvalidArgument("micro_batches " + std::to_string(micro_batches) + " is negative");
  }
  remote_ = std::move(ranges);
  split_ = std::move(split);
  // Stages: the remote ranges and the local runs of layers between them, in layer order (a
  // split range is local: this device waits for the slices of each of its layers).
  stages_.clear();
  int64_t il = 0;
  for (RemoteLayers* r : whole) {
    if (il < r->first_layer()) stages_.push_back({il, r->first_layer(), nullptr});
    stages_.push_back({r->first_layer(), r->end_layer(), r});
    il = r->end_layer();
  }
  if (il < c_.n_layer) stages_.push_back({il, c_.n_layer, nullptr});
  // By default as many micro-batches as devices keep every device of the pipeline busy.
  micro_batches_ = micro_batches > 0 ? micro_batches : static_cast<int64_t>(whole.size()) + 1;
  return Status::Ok();
}

void ForwardPass::StageSegments(std::span<const Segment> segments) {
  stage_segments_.clear();
  for (const Segment& sg : segments)
    stage_segments_.push_back({sg.tokens, sg.start_pos, sg.cache->block_table()});
}

Status ForwardPass::CheckPaged(std::span<const Segment> segments) const {
  for (const Segment& sg : segments) {
    if (sg.cache->block_table().empty()) {
      return Unsupported("layers " + std::to_string(remote_[0]->first_layer()) + ".." +
                         std::to_string(remote_[0]->end_layer() - 1) + " on " + remote_[0]->name() +
                         " need the paged KV cache");
    }
  }
  return Status::Ok();
}

void ForwardPass::SplitMicroBatches(Flight& f, int64_t count) {
  CutTokens(f.segments, f.n, count, f.micro);
}

void ForwardPass::CutTokens(std::span<const Segment> segments, int64_t n, int64_t count,
                            std::vector<MicroBatch>& out) {
  const int64_t m_count = std::min(count, n);
  out.assign(static_cast<size_t>(m_count), {});
  // Micro-batch m takes tokens [n*m/M, n*(m+1)/M): a long prompt chunk is cut too, its parts
  // in order, so that every stage has seen the keys of a part before the next part's attention.
  size_t seg = 0;
  int64_t seg_done = 0, t = 0;
  for (int64_t m = 0; m < m_count; ++m) {
    MicroBatch& mb = out[static_cast<size_t>(m)];
    mb.t_first = t;
    const int64_t end = n * (m + 1) / m_count;
    while (t < end) {
      const Segment& sg = segments[seg];
      const int64_t len = static_cast<int64_t>(sg.tokens.size());
      const int64_t take = std::min(len - seg_done, end - t);
      mb.segments.push_back(
          {sg.cache, sg.tokens.subspan(seg_done, take), sg.start_pos + seg_done, false});
      t += take;
      seg_done += take;
      if (seg_done == len) {
        ++seg;
        seg_done = 0;
      }
    }
    mb.n = t - mb.t_first;
  }
}

bool ForwardPass::Landed(const Flight& f) const {
  for (const MicroBatch& mb : f.micro) {
    if (mb.busy || (remote_error_.ok() && mb.next < stages_.size())) return false;
  }
  return true;
}

void ForwardPass::Drive(bool until_oldest_lands) {
  const size_t s_count = stages_.size();
  // The micro-batches of every flight, oldest first, go through each stage in that order, so
  // that none passes one before it (a later part of a prompt needs the keys of the earlier
  // ones). Remote stages are started as soon as they can be; local work goes to the first
  // micro-batch ready; the thread waits only when none is.
  for (;;) {
    for (auto& f : flights_) {
      for (MicroBatch& mb : f->micro) {
        if (!remote_error_.ok()) break;
        if (mb.busy || mb.next == s_count || !stages_[mb.next].remote) continue;
        StageSegments(mb.segments);
        remote_error_ = stages_[mb.next].remote->Start(
            stage_segments_, c_.n_embd,
            {&f->x[mb.t_first * c_.n_embd], static_cast<size_t>(mb.n * c_.n_embd)});
        mb.busy = remote_error_.ok();
      }
    }
    bool worked = false;
    for (auto& f : flights_) {
      for (MicroBatch& mb : f->micro) {
        if (!remote_error_.ok() || mb.busy || mb.next == s_count) continue;
        const Stage& st = stages_[mb.next];
        for (int64_t il = st.first; il < st.end; ++il) Layer(il, *f, mb.t_first, mb.n, mb.segments);
        ++mb.next;
        worked = true;
        break;
      }
      if (worked) break;
    }
    if (worked) continue;
    if (!until_oldest_lands || Landed(*flights_.front())) return;
    MicroBatch* wait = nullptr;
    for (auto& f : flights_) {
      for (MicroBatch& mb : f->micro) {
        if (mb.busy) {
          wait = &mb;
          break;
        }
      }
      if (wait) break;
    }
    if (!wait) return;
    wait->busy = false;
    if (Status st = stages_[wait->next].remote->Finish(); !st.ok()) {
      if (remote_error_.ok()) remote_error_ = st;
    } else {
      ++wait->next;
    }
  }
}

void ForwardPass::LocalLayers(Flight& f, int64_t first, int64_t end) {
  for (int64_t il = first; il < end; ++il) Layer(il, f, 0, f.n, f.segments);
}

Status ForwardPass::RunLayers(std::span<const Segment> segments, int64_t first, int64_t end,
                              std::span<float> hidden) {
  if (first < 0 || first >= end || end > c_.n_layer) {
    return InvalidArgument("layers " + std::to_string(first) + ".." + std::to_string(end - 1) +
                           " fall outside the model's " + std::to_string(c_.n_layer) + " layers");
  }
  if (!remote_.empty()) return Internal("a worker's layers run without remote ranges of its own");
  Flight& f = worker_flight_;
  SPARROW_RETURN_IF_ERROR(Prepare(segments, f));
  if (static_cast<int64_t>(hidden.size()) != f.n * c_.n_embd) {
    return InvalidArgument("hidden state of " + std::to_string(hidden.size()) + " floats for " +
                           std::to_string(f.n) + " tokens of " + std::to_string(c_.n_embd));
  }
  std::copy(hidden.begin(), hidden.end(), f.x.begin());
  LocalLayers(f, first, end);
  if (!f.ffn_error.ok()) return f.ffn_error;
  std::copy_n(f.x.begin(), hidden.size(), hidden.begin());
  return Status::Ok();
}

Status ForwardPass::RunBatch(std::span<const Segment> segments, std::vector<float>* logits,
                             std::vector<Status>* failures, std::vector<float>* hidden) {
  if (!flights_.empty()) return Internal("RunBatch with batches in flight");
  SPARROW_RETURN_IF_ERROR(Submit(segments));
  return Collect(logits, failures, hidden);
}

Status ForwardPass::Submit(std::span<const Segment> segments) {
  std::unique_ptr<Flight> f;
  if (spare_.empty()) {
    f = std::make_unique<Flight>();
  } else {
    f = std::move(spare_.back());
    spare_.pop_back();
  }
  if (Status st = Prepare(segments, *f); !st.ok()) {
    spare_.push_back(std::move(f));
    return st;
  }
  const ModelWeights& w = model_.weights();
  int64_t t0 = 0;
  for (const Segment& sg : segments) {
    const int64_t len = static_cast<int64_t>(sg.tokens.size());
    kernels::GetRows(w.token_embd, sg.tokens.data(), len, &f->x[t0 * c_.n_embd]);
    t0 += len;
  }
  if (c_.embed_scale != 0.0f) kernels::ScaleInPlace(f->x.data(), f->n * c_.n_embd, c_.embed_scale);
  if (c_.arch->encoder) EncoderInput(*f);
  if (remote_.empty()) {
    LocalLayers(*f, 0, c_.n_layer);
    flights_.push_back(std::move(f));
    return Status::Ok();
  }
  if (Status st = CheckPaged(segments); !st.ok()) {
    spare_.push_back(std::move(f));
    return st;
  }
  // A batch alone in the pipeline is cut so that the devices share it; behind others, it is
  // one more micro-batch filling the pipeline.
  SplitMicroBatches(*f, flights_.empty() ? micro_batches_ : 1);
  flights_.push_back(std::move(f));
  Drive(false);
  return Status::Ok();
}

Status ForwardPass::Collect(std::vector<float>* logits, std::vector<Status>* failures,
                            std::vector<float>* hidden) {
  if (flights_.empty()) return Internal("Collect with no batch in flight");
  if (!remote_.empty()) Drive(true);
  std::unique_ptr<Flight> owned = std::move(flights_.front());
  flights_.pop_front();
  Flight& f = *owned;
  struct Recycle {
    ForwardPass* fp;
    std::unique_ptr<Flight>& f;
    ~Recycle() { fp->spare_.push_back(std::move(f)); }
  } recycle{this, owned};
  const std::span<const Segment> segments = f.segments;

  // A remote range that fails costs the whole batch (and every batch in flight with it).
  remote_failed_ = f.split_failed;
  for (const MicroBatch& mb : f.micro) {
    if (mb.next < stages_.size()) remote_failed_ = true;
  }
  if (remote_failed_) {
    f.ffn_error = remote_error_;
    std::fill(f.failed.begin(), f.failed.end(), 1);
  }
  if (flights_.empty()) remote_error_ = Status::Ok();
  if (!f.ffn_error.ok()) {
    if (!failures) return f.ffn_error;
    // An FFN that failed without saying which tokens it cost failed them all.
    if (std::none_of(f.failed.begin(), f.failed.end(), [](uint8_t x) { return x != 0; })) {
      std::fill(f.failed.begin(), f.failed.end(), 1);
    }
    failures->assign(segments.size(), Status::Ok());
    int64_t t = 0;
    for (size_t i = 0; i < segments.size(); ++i) {
      const auto len = static_cast<int64_t>(segments[i].tokens.size());
      if (std::any_of(&f.failed[t], &f.failed[t] + len, [](uint8_t x) { return x != 0; })) {
        (*failures)[i] = f.ffn_error;
      }
      t += len;
    }
  } else if (failures) {
    failures->assign(segments.size(), Status::Ok());
  }

  // Only the rows whose logits are wanted go through the output layer; gather them first. The
  // hidden rows wanted are the same norm's output, and go no further.
  const ModelWeights& w = model_.weights();
  if (f.hidden_rows > 0) {
    if (hidden == nullptr) return Internal("hidden states asked for and nowhere to put them");
    hidden->resize(static_cast<size_t>(f.hidden_rows * c_.n_embd));
  }
  Resize(f.rows);
  int64_t row = 0, hrow = 0, t0 = 0;
  for (const Segment& sg : segments) {
    const int64_t len = static_cast<int64_t>(sg.tokens.size());
    for (int64_t t = sg.all_logits ? 0 : len - 1; t < len; ++t) {
      float* out = sg.hidden ? &(*hidden)[hrow++ * c_.n_embd] : &xn_[row++ * c_.n_embd];
      const float* x = &f.x[(t0 + t) * c_.n_embd];
      if (c_.arch->encoder) {  // its last block's LayerNorm was the output norm
        std::copy_n(x, c_.n_embd, out);
      } else {
        kernels::RmsNorm(x, w.output_norm.data(), c_.n_embd, c_.rms_eps, out);
      }
    }
    t0 += len;
  }
  logits->resize(f.rows * c_.n_vocab);
  if (f.rows == 0) return Status::Ok();
  kernels::MatMul(w.output, xn_.data(), f.rows, c_.n_embd, logits->data(), c_.n_vocab, pool_);
  if (c_.final_softcap > 0.0f) {
    const float cap = c_.final_softcap, inv = 1.0f / cap;
    for (float& v : *logits) v = std::tanh(v * inv) * cap;
  }
  return Status::Ok();
}

void ForwardPass::Attention(int64_t il, const Heads& h, Flight& f, int64_t t_first, int64_t n,
                            std::span<const Segment> segments, const float* in, float* out) {
  const LayerWeights& l = model_.weights().layers[il];
  const int64_t d = c_.n_embd, hd = c_.head_dim, qd = h.n_head * hd, kvd = h.n_head_kv * hd,
                half = c_.n_rot / 2;
  kernels::MatMul(*h.wq, in, n, d, q_.data(), qd, pool_);
  kernels::MatMul(*h.wk, in, n, d, k_.data(), kvd, pool_);
  kernels::MatMul(*h.wv, in, n, d, v_.data(), kvd, pool_);
  const bool swa = c_.is_swa(il), rope = c_.uses_rope(il);
  const float* cos_t = (swa ? f.cos_swa.data() : f.cos.data()) + t_first * half;
  const float* sin_t = (swa ? f.sin_swa.data() : f.sin.data()) + t_first * half;
  for (int64_t t = 0; t < n; ++t) {
    float* q = &q_[t * qd];
    float* k = &k_[t * kvd];
    if (!h.bq->empty()) kernels::AddInPlace(q, h.bq->data(), qd);
    if (!h.bk->empty()) kernels::AddInPlace(k, h.bk->data(), kvd);
    if (!h.bv->empty()) kernels::AddInPlace(&v_[t * kvd], h.bv->data(), kvd);
    if (c_.arch->qk_norm_whole) {
      kernels::RmsNormRows(q, 1, qd, l.attn_q_norm.data(), c_.rms_eps);
      kernels::RmsNormRows(k, 1, kvd, l.attn_k_norm.data(), c_.rms_eps);
    } else if (!l.attn_q_norm.empty()) {
      kernels::RmsNormRows(q, h.n_head, hd, l.attn_q_norm.data(), c_.rms_eps);
      kernels::RmsNormRows(k, h.n_head_kv, hd, l.attn_k_norm.data(), c_.rms_eps);
    }
    if (rope) {
      ApplyRope(c_.arch->rope_style, q, h.n_head, hd, c_.n_rot, &cos_t[t * half], &sin_t[t * half]);
      ApplyRope(c_.arch->rope_style, k, h.n_head_kv, hd, c_.n_rot, &cos_t[t * half],
                &sin_t[t * half]);
    }
    if (c_.q_scale != 0.0f) kernels::ScaleInPlace(q, qd, c_.q_scale);
  }
  const AttentionShape shape{
      h.n_head,           h.n_head_kv,     hd,       c_.q_scale != 0.0f ? 1.0f : 0.0f,
      swa ? c_.n_swa : 0, c_.attn_softcap, c_.causal};
  // Keys and values join each sequence's cache (a slice's heads at the start of each row);
  // attention stays within the sequence.
  int64_t t0 = 0;
  for (const Segment& sg : segments) {
    const int64_t len = static_cast<int64_t>(sg.tokens.size());
    const KvTypes kv_types = sg.cache->types();
    for (int64_t t = 0; t < len; ++t) {
      StoreKvRow(kv_types.k, &k_[(t0 + t) * kvd], sg.cache->KeyRow(il, sg.start_pos + t), kvd);
      StoreKvRow(kv_types.v, &v_[(t0 + t) * kvd], sg.cache->ValueRow(il, sg.start_pos + t), kvd);
    }
    SequenceAttention(shape, &q_[t0 * qd], *sg.cache, il, sg.start_pos, len, &att_[t0 * qd], pool_,
                      attn_scratch_);
    t0 += len;
  }
  kernels::MatMul(*h.wo, att_.data(), n, qd, out, d, pool_);
  if (h.bo && !h.bo->empty()) kernels::AddToRows(out, n, d, h.bo->data());
}

void ForwardPass::Layer(int64_t il, Flight& f, int64_t t_first, int64_t n,
                        std::span<const Segment> segments) {
  if (split_ && il >= split_->first && il < split_->end) {
    SplitLayer(il, f, t_first, n, segments);
    return;
  }
  if (c_.arch->encoder) {
    EncoderLayer(il, f, t_first, n, segments);
    return;
  }
  const LayerWeights& l = model_.weights().layers[il];
  const int64_t d = c_.n_embd;
  // The batch's tokens t_first.. (a micro-batch of a pipeline, or all of them): their residual
  // stream, flags and RoPE rows; the other scratch is the layer's own.
  float* x = &f.x[t_first * d];

  // Attention block. A router that reads the layer's input (SmallThinker) gets a copy of it.
  if (c_.arch->router_on_layer_input) layer_in_.assign(x, x + n * d);
  for (int64_t t = 0; t < n; ++t)
    kernels::RmsNorm(&x[t * d], l.attn_norm.data(), d, c_.rms_eps, &xn_[t * d]);
  // The attention output projection writes into xn_ (free by then), then joins the residual.
  Attention(il, {c_.n_head, c_.n_head_kv, &l.wq, &l.wk, &l.wv, &l.wo, &l.bq, &l.bk, &l.bv}, f,
            t_first, n, segments, xn_.data(), xn_.data());
  if (!l.attn_post_norm.empty())
    kernels::RmsNormRows(xn_.data(), n, d, l.attn_post_norm.data(), c_.rms_eps);
  kernels::AddInPlace(x, xn_.data(), n * d);

  // Feed-forward block, dense or sparse.
  for (int64_t t = 0; t < n; ++t)
    kernels::RmsNorm(&x[t * d], l.ffn_norm.data(), d, c_.rms_eps, &xn_[t * d]);
  // A token whose FFN failed keeps going with a zero FFN (its result is discarded), so that the
  // batch's other tokens are computed as if it had not failed.
  FfnInput in{x, xn_.data(), &f.decode[t_first], n, &f.failed[t_first]};
  if (c_.arch->router_on_layer_input) in.layer_input = layer_in_.data();
  Status st = ffn_->Compute(il, in, ffn_out_.data());
  if (!st.ok() && f.ffn_error.ok()) f.ffn_error = st;
  if (!l.ffn_post_norm.empty())
    kernels::RmsNormRows(ffn_out_.data(), n, d, l.ffn_post_norm.data(), c_.rms_eps);
  kernels::AddInPlace(x, ffn_out_.data(), n * d);
}

}  // namespace sparrow
