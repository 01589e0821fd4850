#include "engine/runtime/forward_pass.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/kernels/matmul.h"
#include "engine/kernels/thread_pool.h"
#include "engine/kernels/vec_ops.h"
#include "engine/runtime/attention.h"
#include "engine/sparse/ffn_factory.h"

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

// Each row of x (n rows of `len`) RMS-normed with weight w, in place.
void NormRows(float* x, int64_t n, int64_t len, const std::vector<float>& w, float eps) {
  for (int64_t r = 0; r < n; ++r) kernels::RmsNorm(&x[r * len], w.data(), len, eps, &x[r * len]);
}

}  // namespace

ForwardPass::ForwardPass(const Model& model, kernels::ThreadPool* pool,
                         std::unique_ptr<FeedForward> ffn)
    : model_(model),
      c_(model.config()),
      pool_(pool),
      rope_(RopeFor(c_, model.weights(), false)),
      rope_swa_(RopeFor(c_, model.weights(), true)),
      ffn_(ffn ? std::move(ffn) : MakeDefaultFeedForward(model, pool)) {}

ForwardPass::~ForwardPass() = default;

void ForwardPass::Resize(int64_t n) {
  auto grow = [](std::vector<float>& v, int64_t size) {
    if (v.size() < static_cast<size_t>(size)) v.resize(size);
  };
  grow(x_, n * c_.n_embd);
  grow(xn_, n * c_.n_embd);
  grow(q_, n * c_.q_dim());
  grow(k_, n * c_.kv_dim());
  grow(v_, n * c_.kv_dim());
  grow(att_, n * c_.q_dim());
  grow(ffn_out_, n * c_.n_embd);
  grow(cos_, n * (c_.n_rot / 2));
  grow(sin_, n * (c_.n_rot / 2));
  if (!c_.swa_layers.empty()) {
    grow(cos_swa_, n * (c_.n_rot / 2));
    grow(sin_swa_, n * (c_.n_rot / 2));
  }
}

Status ForwardPass::Run(std::span<const int32_t> tokens, int64_t start_pos, KvCache& cache,
                        bool all_logits, std::vector<float>* logits) {
  const Segment seg{&cache, tokens, start_pos, all_logits};
  return RunBatch({&seg, 1}, logits);
}

Status ForwardPass::Prepare(std::span<const Segment> segments, int64_t* n_out, int64_t* rows_out) {
  int64_t n = 0, rows = 0;
  for (const Segment& sg : segments) {
    const int64_t len = static_cast<int64_t>(sg.tokens.size());
    if (len == 0 || sg.cache == nullptr) return InvalidArgument("no tokens to evaluate");
    if (sg.start_pos < 0 || sg.start_pos + len > sg.cache->capacity()) {
      return OutOfRange("positions " + std::to_string(sg.start_pos) + ".." +
                        std::to_string(sg.start_pos + len - 1) + " exceed the context of " +
                        std::to_string(sg.cache->capacity()) + " tokens");
    }
    for (int32_t id : sg.tokens) {
      if (id < 0 || id >= c_.n_vocab) {
        return OutOfRange("token id " + std::to_string(id) + " is outside the vocabulary of " +
                          std::to_string(c_.n_vocab));
      }
    }
    n += len;
    rows += sg.all_logits ? len : 1;
  }
  if (n == 0) return InvalidArgument("no tokens to evaluate");
  Resize(n);
  decode_.clear();
  for (const Segment& sg : segments)
    decode_.resize(decode_.size() + sg.tokens.size(), sg.tokens.size() == 1);
  const int64_t half = c_.n_rot / 2;
  int64_t t0 = 0;
  for (const Segment& sg : segments) {
    const int64_t len = static_cast<int64_t>(sg.tokens.size());
    for (int64_t t = 0; t < len; ++t) {
      rope_.Compute(sg.start_pos + t, &cos_[(t0 + t) * half], &sin_[(t0 + t) * half]);
      if (!c_.swa_layers.empty()) {
        rope_swa_.Compute(sg.start_pos + t, &cos_swa_[(t0 + t) * half], &sin_swa_[(t0 + t) * half]);
      }
    }
    t0 += len;
  }
  failed_.assign(static_cast<size_t>(n), 0);
  ffn_error_ = Status::Ok();
  *n_out = n;
  *rows_out = rows;
  return Status::Ok();
}

Status ForwardPass::SetRemoteLayers(std::vector<std::shared_ptr<RemoteLayers>> ranges,
                                    int64_t micro_batches) {
  std::sort(ranges.begin(), ranges.end(),
            [](const auto& a, const auto& b) { return a->first_layer() < b->first_layer(); });
  int64_t prev_end = 0;
  for (const auto& r : ranges) {
    const int64_t first = r->first_layer(), end = r->end_layer();
    if (first < prev_end || first >= end || end > c_.n_layer) {
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
  // Stages: the remote ranges and the local runs of layers between them, in layer order.
  stages_.clear();
  int64_t il = 0;
  for (const auto& r : remote_) {
    if (il < r->first_layer()) stages_.push_back({il, r->first_layer(), nullptr});
    stages_.push_back({r->first_layer(), r->end_layer(), r.get()});
    il = r->end_layer();
  }
  if (il < c_.n_layer) stages_.push_back({il, c_.n_layer, nullptr});
  // By default as many micro-batches as devices keep every device of the pipeline busy.
  micro_batches_ = micro_batches > 0 ? micro_batches : static_cast<int64_t>(remote_.size()) + 1;
  return Status::Ok();
}

void ForwardPass::StageSegments(std::span<const Segment> segments) {
  stage_segments_.clear();
  for (const Segment& sg : segments)
    stage_segments_.push_back({sg.tokens, sg.start_pos, sg.cache->block_table()});
}

Status ForwardPass::CheckPaged(std::span<const Segment> segments) const {
  if (remote_.empty()) return Status::Ok();
  for (const Segment& sg : segments) {
    if (sg.cache->block_table().empty()) {
      return Unsupported("layers " + std::to_string(remote_[0]->first_layer()) + ".." +
                         std::to_string(remote_[0]->end_layer() - 1) + " on " + remote_[0]->name() +
                         " need the paged KV cache");
    }
  }
  return Status::Ok();
}

Status ForwardPass::Layers(int64_t first, int64_t end, int64_t n,
                           std::span<const Segment> segments) {
  size_t next_remote = 0;
  for (int64_t il = first; il < end;) {
    while (next_remote < remote_.size() && remote_[next_remote]->end_layer() <= il) ++next_remote;
    if (next_remote < remote_.size() && remote_[next_remote]->first_layer() == il) {
      RemoteLayers& range = *remote_[next_remote];
      if (range.end_layer() > end) return Internal("a remote range crosses the layers asked for");
      StageSegments(segments);
      SPARROW_RETURN_IF_ERROR(
          range.Run(stage_segments_, c_.n_embd, {x_.data(), static_cast<size_t>(n * c_.n_embd)}));
      il = range.end_layer();
      continue;
    }
    Layer(il, 0, n, segments);
    ++il;
  }
  return Status::Ok();
}

void ForwardPass::SplitMicroBatches(int64_t n, std::span<const Segment> segments) {
  const int64_t m_count = std::min(micro_batches_, n);
  micro_.assign(static_cast<size_t>(m_count), {});
  // Micro-batch m takes tokens [n*m/M, n*(m+1)/M): a long prompt chunk is cut too, its parts
  // in order, so that every stage has seen the keys of a part before the next part's attention.
  size_t seg = 0;
  int64_t seg_done = 0, t = 0;
  for (int64_t m = 0; m < m_count; ++m) {
    MicroBatch& mb = micro_[static_cast<size_t>(m)];
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

Status ForwardPass::Pipeline(int64_t n, std::span<const Segment> segments) {
  SplitMicroBatches(n, segments);
  const size_t m_count = micro_.size(), s_count = stages_.size();
  std::vector<size_t> next(m_count, 0);   // each micro-batch's next stage
  std::vector<uint8_t> busy(m_count, 0);  // started on a remote stage, not finished
  Status err;
  // Every stage takes the micro-batches in order, so a micro-batch never passes one before it;
  // local work goes to the first one ready, remote stages are started as soon as they can be,
  // and the thread waits only when no local work is left.
  for (;;) {
    for (size_t m = 0; err.ok() && m < m_count; ++m) {
      if (busy[m] || next[m] == s_count || !stages_[next[m]].remote) continue;
      MicroBatch& mb = micro_[m];
      StageSegments(mb.segments);
      err = stages_[next[m]].remote->Start(
          stage_segments_, c_.n_embd,
          {&x_[mb.t_first * c_.n_embd], static_cast<size_t>(mb.n * c_.n_embd)});
      busy[m] = err.ok();
    }
    size_t m = 0;
    while (err.ok() && m < m_count && (busy[m] || next[m] == s_count)) ++m;
    if (err.ok() && m < m_count) {
      const Stage& st = stages_[next[m]];
      for (int64_t il = st.first; il < st.end; ++il)
        Layer(il, micro_[m].t_first, micro_[m].n, micro_[m].segments);
      ++next[m];
      continue;
    }
    m = 0;
    while (m < m_count && !busy[m]) ++m;
    if (m == m_count) break;
    busy[m] = 0;
    if (Status st = stages_[next[m]].remote->Finish(); !st.ok()) {
      if (err.ok()) err = st;
    } else {
      ++next[m];
    }
  }
  return err;
}

Status ForwardPass::RunLayers(std::span<const Segment> segments, int64_t first, int64_t end,
                              std::span<float> hidden) {
  if (first < 0 || first >= end || end > c_.n_layer) {
    return InvalidArgument("layers " + std::to_string(first) + ".." + std::to_string(end - 1) +
                           " fall outside the model's " + std::to_string(c_.n_layer) + " layers");
  }
  int64_t n = 0, rows = 0;
  SPARROW_RETURN_IF_ERROR(Prepare(segments, &n, &rows));
  if (static_cast<int64_t>(hidden.size()) != n * c_.n_embd) {
    return InvalidArgument("hidden state of " + std::to_string(hidden.size()) + " floats for " +
                           std::to_string(n) + " tokens of " + std::to_string(c_.n_embd));
  }
  std::copy(hidden.begin(), hidden.end(), x_.begin());
  SPARROW_RETURN_IF_ERROR(Layers(first, end, n, segments));
  if (!ffn_error_.ok()) return ffn_error_;
  std::copy_n(x_.begin(), hidden.size(), hidden.begin());
  return Status::Ok();
}

Status ForwardPass::RunBatch(std::span<const Segment> segments, std::vector<float>* logits,
                             std::vector<Status>* failures) {
  int64_t n = 0, rows = 0;
  SPARROW_RETURN_IF_ERROR(Prepare(segments, &n, &rows));
  const ModelWeights& w = model_.weights();
  int64_t t0 = 0;
  for (const Segment& sg : segments) {
    const int64_t len = static_cast<int64_t>(sg.tokens.size());
    kernels::GetRows(w.token_embd, sg.tokens.data(), len, &x_[t0 * c_.n_embd]);
    t0 += len;
  }

  if (c_.embed_scale != 0.0f) kernels::ScaleInPlace(x_.data(), n * c_.n_embd, c_.embed_scale);

  // A remote range that fails costs the whole batch.
  remote_failed_ = false;
  Status layers = CheckPaged(segments);
  if (layers.ok()) {
    layers = !remote_.empty() && micro_batches_ > 1 && n > 1 ? Pipeline(n, segments)
                                                             : Layers(0, c_.n_layer, n, segments);
  }
  if (Status st = layers; !st.ok()) {
    remote_failed_ = true;
    ffn_error_ = st;
    std::fill(failed_.begin(), failed_.end(), 1);
  }
  if (!ffn_error_.ok()) {
    if (!failures) return ffn_error_;
    // An FFN that failed without saying which tokens it cost failed them all.
    if (std::none_of(failed_.begin(), failed_.end(), [](uint8_t f) { return f != 0; })) {
      std::fill(failed_.begin(), failed_.end(), 1);
    }
    failures->assign(segments.size(), Status::Ok());
    int64_t t = 0;
    for (size_t i = 0; i < segments.size(); ++i) {
      const auto len = static_cast<int64_t>(segments[i].tokens.size());
      if (std::any_of(&failed_[t], &failed_[t] + len, [](uint8_t f) { return f != 0; })) {
        (*failures)[i] = ffn_error_;
      }
      t += len;
    }
  } else if (failures) {
    failures->assign(segments.size(), Status::Ok());
  }

  // Only the rows whose logits are wanted go through the output layer; gather them first.
  int64_t row = 0;
  t0 = 0;
  for (const Segment& sg : segments) {
    const int64_t len = static_cast<int64_t>(sg.tokens.size());
    for (int64_t t = sg.all_logits ? 0 : len - 1; t < len; ++t, ++row) {
      kernels::RmsNorm(&x_[(t0 + t) * c_.n_embd], w.output_norm.data(), c_.n_embd, c_.rms_eps,
                       &xn_[row * c_.n_embd]);
    }
    t0 += len;
  }
  logits->resize(rows * c_.n_vocab);
  kernels::MatMul(w.output, xn_.data(), rows, c_.n_embd, logits->data(), c_.n_vocab, pool_);
  if (c_.final_softcap > 0.0f) {
    const float cap = c_.final_softcap, inv = 1.0f / cap;
    for (float& v : *logits) v = std::tanh(v * inv) * cap;
  }
  return Status::Ok();
}

void ForwardPass::Attention(int64_t il, int64_t t_first, int64_t n,
                            std::span<const Segment> segments) {
  const LayerWeights& l = model_.weights().layers[il];
  const int64_t qd = c_.q_dim(), kvd = c_.kv_dim(), half = c_.n_rot / 2;
  const bool swa = c_.is_swa(il), rope = c_.uses_rope(il);
  const float* cos_t = (swa ? cos_swa_.data() : cos_.data()) + t_first * half;
  const float* sin_t = (swa ? sin_swa_.data() : sin_.data()) + t_first * half;
  for (int64_t t = 0; t < n; ++t) {
    float* q = &q_[t * qd];
    float* k = &k_[t * kvd];
    if (!l.bq.empty()) kernels::AddInPlace(q, l.bq.data(), qd);
    if (!l.bk.empty()) kernels::AddInPlace(k, l.bk.data(), kvd);
    if (!l.bv.empty()) kernels::AddInPlace(&v_[t * kvd], l.bv.data(), kvd);
    if (c_.arch->qk_norm_whole) {
      NormRows(q, 1, qd, l.attn_q_norm, c_.rms_eps);
      NormRows(k, 1, kvd, l.attn_k_norm, c_.rms_eps);
    } else if (!l.attn_q_norm.empty()) {
      NormRows(q, c_.n_head, c_.head_dim, l.attn_q_norm, c_.rms_eps);
      NormRows(k, c_.n_head_kv, c_.head_dim, l.attn_k_norm, c_.rms_eps);
    }
    if (rope) {
      ApplyRope(c_.arch->rope_style, q, c_.n_head, c_.head_dim, c_.n_rot, &cos_t[t * half],
                &sin_t[t * half]);
      ApplyRope(c_.arch->rope_style, k, c_.n_head_kv, c_.head_dim, c_.n_rot, &cos_t[t * half],
                &sin_t[t * half]);
    }
    if (c_.q_scale != 0.0f) kernels::ScaleInPlace(q, qd, c_.q_scale);
  }
  const AttentionShape shape{c_.n_head,          c_.n_head_kv,
                             c_.head_dim,        c_.q_scale != 0.0f ? 1.0f : 0.0f,
                             swa ? c_.n_swa : 0, c_.attn_softcap};
  // Keys and values join each sequence's cache; attention stays within the sequence.
  int64_t t0 = 0;
  for (const Segment& sg : segments) {
    const int64_t len = static_cast<int64_t>(sg.tokens.size());
    for (int64_t t = 0; t < len; ++t) {
      std::copy_n(&k_[(t0 + t) * kvd], kvd, sg.cache->Key(il, sg.start_pos + t));
      std::copy_n(&v_[(t0 + t) * kvd], kvd, sg.cache->Value(il, sg.start_pos + t));
    }
    CausalAttention(shape, &q_[t0 * qd], *sg.cache, il, sg.start_pos, len, &att_[t0 * qd], pool_,
                    attn_scratch_);
    t0 += len;
  }
}

void ForwardPass::Layer(int64_t il, int64_t t_first, int64_t n, std::span<const Segment> segments) {
  const LayerWeights& l = model_.weights().layers[il];
  const int64_t d = c_.n_embd, qd = c_.q_dim(), kvd = c_.kv_dim();
  // The batch's tokens t_first.. (a micro-batch of a pipeline, or all of them): their residual
  // stream, flags and RoPE rows; the other scratch is the layer's own.
  float* x = &x_[t_first * d];

  // Attention block. A router that reads the layer's input (SmallThinker) gets a copy of it.
  if (c_.arch->router_on_layer_input) layer_in_.assign(x, x + n * d);
  for (int64_t t = 0; t < n; ++t)
    kernels::RmsNorm(&x[t * d], l.attn_norm.data(), d, c_.rms_eps, &xn_[t * d]);
  kernels::MatMul(l.wq, xn_.data(), n, d, q_.data(), qd, pool_);
  kernels::MatMul(l.wk, xn_.data(), n, d, k_.data(), kvd, pool_);
  kernels::MatMul(l.wv, xn_.data(), n, d, v_.data(), kvd, pool_);
  Attention(il, t_first, n, segments);
  // The attention output projection writes into xn_ (free now), then joins the residual.
  kernels::MatMul(l.wo, att_.data(), n, qd, xn_.data(), d, pool_);
  if (!l.attn_post_norm.empty()) NormRows(xn_.data(), n, d, l.attn_post_norm, c_.rms_eps);
  kernels::AddInPlace(x, xn_.data(), n * d);

  // Feed-forward block, dense or sparse.
  for (int64_t t = 0; t < n; ++t)
    kernels::RmsNorm(&x[t * d], l.ffn_norm.data(), d, c_.rms_eps, &xn_[t * d]);
  // A token whose FFN failed keeps going with a zero FFN (its result is discarded), so that the
  // batch's other tokens are computed as if it had not failed.
  FfnInput in{x, xn_.data(), &decode_[t_first], n, &failed_[t_first]};
  if (c_.arch->router_on_layer_input) in.layer_input = layer_in_.data();
  Status st = ffn_->Compute(il, in, ffn_out_.data());
  if (!st.ok() && ffn_error_.ok()) ffn_error_ = st;
  if (!l.ffn_post_norm.empty()) NormRows(ffn_out_.data(), n, d, l.ffn_post_norm, c_.rms_eps);
  kernels::AddInPlace(x, ffn_out_.data(), n * d);
}

}  // namespace sparrow
