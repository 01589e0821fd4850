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

Status ForwardPass::SetRemoteLayers(std::vector<std::shared_ptr<RemoteLayers>> ranges) {
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
  remote_ = std::move(ranges);
  return Status::Ok();
}

Status ForwardPass::RunRemote(RemoteLayers& range, int64_t n, std::span<const Segment> segments) {
  stage_segments_.clear();
  for (const Segment& sg : segments) {
    if (sg.cache->block_table().empty()) {
      return Unsupported("layers " + std::to_string(range.first_layer()) + ".." +
                         std::to_string(range.end_layer() - 1) + " on " + range.name() +
                         " need the paged KV cache");
    }
    stage_segments_.push_back({sg.tokens, sg.start_pos, sg.cache->block_table()});
  }
  return range.Run(stage_segments_, c_.n_embd, {x_.data(), static_cast<size_t>(n * c_.n_embd)});
}

Status ForwardPass::Layers(int64_t first, int64_t end, int64_t n,
                           std::span<const Segment> segments) {
  size_t next_remote = 0;
  for (int64_t il = first; il < end;) {
    while (next_remote < remote_.size() && remote_[next_remote]->end_layer() <= il) ++next_remote;
    if (next_remote < remote_.size() && remote_[next_remote]->first_layer() == il) {
      RemoteLayers& range = *remote_[next_remote];
      if (range.end_layer() > end) return Internal("a remote range crosses the layers asked for");
      SPARROW_RETURN_IF_ERROR(RunRemote(range, n, segments));
      il = range.end_layer();
      continue;
    }
    Layer(il, n, segments);
    ++il;
  }
  return Status::Ok();
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
  if (Status st = Layers(0, c_.n_layer, n, segments); !st.ok()) {
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

void ForwardPass::Attention(int64_t il, int64_t n, std::span<const Segment> segments) {
  const LayerWeights& l = model_.weights().layers[il];
  const int64_t qd = c_.q_dim(), kvd = c_.kv_dim(), half = c_.n_rot / 2;
  const bool swa = c_.is_swa(il), rope = c_.uses_rope(il);
  const float* cos_t = swa ? cos_swa_.data() : cos_.data();
  const float* sin_t = swa ? sin_swa_.data() : sin_.data();
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

void ForwardPass::Layer(int64_t il, int64_t n, std::span<const Segment> segments) {
  const LayerWeights& l = model_.weights().layers[il];
  const int64_t d = c_.n_embd, qd = c_.q_dim(), kvd = c_.kv_dim();

  // Attention block. A router that reads the layer's input (SmallThinker) gets a copy of it.
  if (c_.arch->router_on_layer_input) layer_in_.assign(x_.begin(), x_.begin() + n * d);
  for (int64_t t = 0; t < n; ++t)
    kernels::RmsNorm(&x_[t * d], l.attn_norm.data(), d, c_.rms_eps, &xn_[t * d]);
  kernels::MatMul(l.wq, xn_.data(), n, d, q_.data(), qd, pool_);
  kernels::MatMul(l.wk, xn_.data(), n, d, k_.data(), kvd, pool_);
  kernels::MatMul(l.wv, xn_.data(), n, d, v_.data(), kvd, pool_);
  Attention(il, n, segments);
  // The attention output projection writes into xn_ (free now), then joins the residual.
  kernels::MatMul(l.wo, att_.data(), n, qd, xn_.data(), d, pool_);
  if (!l.attn_post_norm.empty()) NormRows(xn_.data(), n, d, l.attn_post_norm, c_.rms_eps);
  kernels::AddInPlace(x_.data(), xn_.data(), n * d);

  // Feed-forward block, dense or sparse.
  for (int64_t t = 0; t < n; ++t)
    kernels::RmsNorm(&x_[t * d], l.ffn_norm.data(), d, c_.rms_eps, &xn_[t * d]);
  // A token whose FFN failed keeps going with a zero FFN (its result is discarded), so that the
  // batch's other tokens are computed as if it had not failed.
  FfnInput in{x_.data(), xn_.data(), decode_.data(), n, failed_.data()};
  if (c_.arch->router_on_layer_input) in.layer_input = layer_in_.data();
  Status st = ffn_->Compute(il, in, ffn_out_.data());
  if (!st.ok() && ffn_error_.ok()) ffn_error_ = st;
  if (!l.ffn_post_norm.empty()) NormRows(ffn_out_.data(), n, d, l.ffn_post_norm, c_.rms_eps);
  kernels::AddInPlace(x_.data(), ffn_out_.data(), n * d);
}

}  // namespace sparrow
