#include "engine/vision/siglip_encoder.h"

#include <cmath>
#include <string>

#include "engine/kernels/attention_ops.h"
#include "engine/kernels/matmul.h"
#include "engine/kernels/thread_pool.h"
#include "engine/kernels/vec_ops.h"
#include "engine/vision/image_preprocess.h"

namespace sparrow::vision {

namespace {

using kernels::WeightMatrix;

// y (n x w.rows) = x (n x w.cols) W^T, plus `bias` when it has any.
void Linear(const WeightMatrix& w, const std::vector<float>& bias, const float* x, int64_t n,
            float* y, kernels::ThreadPool* pool) {
  kernels::MatMul(w, x, n, w.cols, y, w.rows, pool);
  if (!bias.empty()) kernels::AddToRows(y, n, w.rows, bias.data());
}

void LayerNormRows(const float* x, int64_t rows, int64_t len, const std::vector<float>& w,
                   const std::vector<float>& b, float eps, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    kernels::LayerNorm(&x[r * len], w.empty() ? nullptr : w.data(), b.empty() ? nullptr : b.data(),
                       len, eps, &out[r * len]);
  }
}

// The patches as rows of 3 * p * p values in (channel, row, column) order, the convolution
// kernel's own order; patch (px, py) is row py * side + px, as ggml's im2col lays them.
std::vector<float> Patches(std::span<const float> pixels, int64_t size, int64_t p) {
  const int64_t side = size / p;
  const int64_t k = 3 * p * p;
  std::vector<float> out(static_cast<size_t>(side * side * k));
  for (int64_t py = 0; py < side; ++py) {
    for (int64_t px = 0; px < side; ++px) {
      float* row = &out[static_cast<size_t>((py * side + px) * k)];
      for (int64_t c = 0; c < 3; ++c) {
        for (int64_t ky = 0; ky < p; ++ky) {
          const float* src = &pixels[static_cast<size_t>((c * size + py * p + ky) * size + px * p)];
          for (int64_t kx = 0; kx < p; ++kx) row[(c * p + ky) * p + kx] = src[kx];
        }
      }
    }
  }
  return out;
}

// Full (bidirectional) multi-head attention of n rows: out = softmax(scale q k^T) v per head.
void Attention(const ClipHparams& hp, const float* q, const float* k, const float* v, int64_t n,
               float* out, kernels::ThreadPool* pool) {
  const int64_t e = hp.n_embd;
  const int64_t d = hp.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  std::vector<const float*> krows(static_cast<size_t>(n)), vrows(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    krows[static_cast<size_t>(j)] = &k[j * e];
    vrows[static_cast<size_t>(j)] = &v[j * e];
  }
  auto head = [&](int64_t h, int /*thread*/) {
    std::vector<float> p(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      kernels::AttentionScores(&q[i * e + h * d], krows.data(), h * d, n, d, scale, p.data());
      kernels::SoftmaxInPlace(p.data(), n);
      kernels::AttentionMix(p.data(), vrows.data(), h * d, n, d, &out[i * e + h * d]);
    }
  };
  if (pool) {
    pool->ParallelFor(hp.n_head, head);
  } else {
    for (int64_t h = 0; h < hp.n_head; ++h) head(h, 0);
  }
}

// One pre-LN block on x (n x n_embd), in place.
void Block(const ClipHparams& hp, const ClipLayer& l, float* x, int64_t n,
           kernels::ThreadPool* pool) {
  const int64_t e = hp.n_embd;
  const auto ne = static_cast<size_t>(n * e);
  std::vector<float> cur(ne), q(ne), k(ne), v(ne), attn(ne);
  LayerNormRows(x, n, e, l.ln1_w, l.ln1_b, hp.eps, cur.data());
  Linear(l.q, l.q_b, cur.data(), n, q.data(), pool);
  Linear(l.k, l.k_b, cur.data(), n, k.data(), pool);
  Linear(l.v, l.v_b, cur.data(), n, v.data(), pool);
  Attention(hp, q.data(), k.data(), v.data(), n, attn.data(), pool);
  Linear(l.o, l.o_b, attn.data(), n, cur.data(), pool);
  kernels::AddInPlace(x, cur.data(), n * e);

  LayerNormRows(x, n, e, l.ln2_w, l.ln2_b, hp.eps, cur.data());
  std::vector<float> up(static_cast<size_t>(n * hp.n_ff));
  Linear(l.up, l.up_b, cur.data(), n, up.data(), pool);
  kernels::Gelu(up.data(), n * hp.n_ff, up.data());
  Linear(l.down, l.down_b, up.data(), n, cur.data(), pool);
  kernels::AddInPlace(x, cur.data(), n * e);
}

// gemma3: the patch grid averaged over n_merge x n_merge squares (ggml_pool_2d's order: rows,
// then columns, summed in float, then divided).
std::vector<float> AveragePool(const ClipHparams& hp, const std::vector<float>& x) {
  const int64_t e = hp.n_embd;
  const int64_t side = hp.patches_per_side();
  const int64_t m = hp.n_merge;
  const int64_t tside = hp.tokens_per_side();
  const auto area = static_cast<float>(m * m);
  std::vector<float> out(static_cast<size_t>(tside * tside * e));
  for (int64_t oy = 0; oy < tside; ++oy) {
    for (int64_t ox = 0; ox < tside; ++ox) {
      float* dst = &out[static_cast<size_t>((oy * tside + ox) * e)];
      for (int64_t c = 0; c < e; ++c) {
        float sum = 0.0f;
        for (int64_t ky = 0; ky < m; ++ky) {
          for (int64_t kx = 0; kx < m; ++kx) {
            sum += x[static_cast<size_t>(((oy * m + ky) * side + ox * m + kx) * e + c)];
          }
        }
        dst[c] = sum / area;
      }
    }
  }
  return out;
}

}  // namespace

Result<ImageEmbeddings> EncodeGemma3Pixels(const ClipModel& model, std::span<const float> pixels,
                                           kernels::ThreadPool* pool) {
  const ClipHparams& hp = model.hparams();
  const int64_t size = hp.image_size;
  if (pixels.size() != static_cast<size_t>(3 * size * size)) {
    return InvalidArgument("the encoder takes 3 planes of " + std::to_string(size) + "x" +
                           std::to_string(size) + " pixels, got " + std::to_string(pixels.size()) +
                           " values");
  }
  const int64_t n = hp.n_patches();
  const int64_t e = hp.n_embd;
  const std::vector<float> patches = Patches(pixels, size, hp.patch_size);
  std::vector<float> x(static_cast<size_t>(n * e));
  Linear(model.patch_embd(), model.patch_bias(), patches.data(), n, x.data(), pool);
  kernels::AddInPlace(x.data(), model.positions().data(), n * e);
  for (const ClipLayer& l : model.layers()) Block(hp, l, x.data(), n, pool);
  LayerNormRows(x.data(), n, e, model.post_ln_w(), model.post_ln_b(), hp.eps, x.data());

  std::vector<float> pooled = AveragePool(hp, x);
  const int64_t t = hp.n_image_tokens();
  kernels::RmsNormRows(pooled.data(), t, e, model.soft_emb_norm().data(), hp.eps);
  ImageEmbeddings out;
  out.n_tokens = t;
  out.n_embd = hp.n_text_embd;
  out.data.resize(static_cast<size_t>(t * hp.n_text_embd));
  Linear(model.input_proj(), {}, pooled.data(), t, out.data.data(), pool);
  return out;
}

Result<ImageEmbeddings> EncodeImage(const ClipModel& model, const Image& image,
                                    kernels::ThreadPool* pool) {
  if (image.width <= 0 || image.height <= 0) return InvalidArgument("the image is empty");
  const std::vector<float> pixels = PreprocessGemma3(image, model.hparams());
  return EncodeGemma3Pixels(model, pixels, pool);
}

}  // namespace sparrow::vision
