// ForwardPass's encoder half (ArchSpec::encoder: BERT, nomic-bert), as llama.cpp d32676d7's
// src/models/bert.cpp: the input rows (token + type 0 + position, LayerNormed) and the post-norm
// block (x = LN(x + attention(x)), x = LN(x + ffn(x))). Attention and the FFN are the decoder's.
#include <string>

#include "engine/kernels/matmul.h"
#include "engine/kernels/vec_ops.h"
#include "engine/runtime/forward_pass.h"

namespace sparrow {

Status ForwardPass::CheckEncoderSegment(const Segment& sg) const {
  const auto len = static_cast<int64_t>(sg.tokens.size());
  // Without causality a token's keys depend on the whole input: it must be computed at once.
  if (!c_.causal && sg.start_pos != 0) {
    return InvalidArgument(
        "an encoder attends to its whole input: it must be computed in one "
        "pass from position 0, not from position " +
        std::to_string(sg.start_pos));
  }
  const ModelWeights& w = model_.weights();
  if (w.position_embd.data != nullptr && sg.start_pos + len > w.position_embd.rows) {
    return OutOfRange("positions " + std::to_string(sg.start_pos) + ".." +
                      std::to_string(sg.start_pos + len - 1) + " exceed the model's " +
                      std::to_string(w.position_embd.rows) + " position embeddings");
  }
  return Status::Ok();
}

void ForwardPass::EncoderInput(Flight& f) {
  const ModelWeights& w = model_.weights();
  const int64_t d = c_.n_embd;
  int64_t t0 = 0;
  std::vector<int32_t> positions;
  for (const Segment& sg : f.segments) {
    const auto len = static_cast<int64_t>(sg.tokens.size());
    float* x = &f.x[t0 * d];
    if (!w.token_type0.empty()) kernels::AddToRows(x, len, d, w.token_type0.data());
    if (w.position_embd.data != nullptr) {
      positions.resize(static_cast<size_t>(len));
      for (int64_t t = 0; t < len; ++t) positions[t] = static_cast<int32_t>(sg.start_pos + t);
      // xn_ holds the batch's rows (Prepare); free until the first layer.
      kernels::GetRows(w.position_embd, positions.data(), len, xn_.data());
      kernels::AddInPlace(x, xn_.data(), len * d);
    }
    t0 += len;
  }
  for (int64_t t = 0; t < f.n; ++t) {
    float* x = &f.x[t * d];
    kernels::LayerNorm(x, w.token_embd_norm.data(), w.token_embd_norm_b.data(), d, c_.norm_eps, x);
  }
}

void ForwardPass::EncoderLayer(int64_t il, Flight& f, int64_t t_first, int64_t n,
                               std::span<const Segment> segments) {
  const LayerWeights& l = model_.weights().layers[il];
  const int64_t d = c_.n_embd;
  float* x = &f.x[t_first * d];
  // Attention reads the block's input as it is (no norm before), into xn_.
  Attention(il, {c_.n_head, c_.n_head_kv, &l.wq, &l.wk, &l.wv, &l.wo, &l.bq, &l.bk, &l.bv, &l.bo},
            f, t_first, n, segments, x, xn_.data());
  kernels::AddInPlace(xn_.data(), x, n * d);
  for (int64_t t = 0; t < n; ++t) {
    kernels::LayerNorm(&xn_[t * d], l.attn_out_norm.data(), l.attn_out_norm_b.data(), d,
                       c_.norm_eps, &x[t * d]);
  }
  // The FFN reads the normed sum (it is both the residual and the FFN's input).
  FfnInput in{x, x, &f.decode[t_first], n, &f.failed[t_first]};
  Status st = ffn_->Compute(il, in, ffn_out_.data());
  if (!st.ok() && f.ffn_error.ok()) f.ffn_error = st;
  kernels::AddInPlace(ffn_out_.data(), x, n * d);
  for (int64_t t = 0; t < n; ++t) {
    kernels::LayerNorm(&ffn_out_[t * d], l.layer_out_norm.data(), l.layer_out_norm_b.data(), d,
                       c_.norm_eps, &x[t * d]);
  }
}

}  // namespace sparrow
