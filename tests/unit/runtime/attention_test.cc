#include "engine/runtime/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/kernels/dequantize.h"
#include "engine/kernels/thread_pool.h"
#include "engine/kernels/vec_dot.h"

namespace sparrow {
namespace {

std::vector<float> Dequantized(TensorType type, const uint8_t* row, int64_t n) {
  std::vector<float> out(n);
  kernels::DequantizeRow(type, row, out.data(), n);
  return out;
}

// Naive double-precision causal GQA attention, with the shape's scale, sliding window and
// soft-cap written from their definitions, over the values the cache stores, the query of a
// typed cache rounded to the keys' vec-dot type first (as ggml rounds it).
std::vector<float> Reference(const AttentionShape& s, std::vector<float> q, KvCache& cache,
                             int64_t layer, int64_t start, int64_t n) {
  const int64_t qd = s.n_head * s.head_dim, kvd = s.n_head_kv * s.head_dim;
  const KvTypes types = cache.types();
  if (types.k != TensorType::kF32) {
    const TensorType qt = kernels::VecDotType(types.k);
    std::vector<uint8_t> buf(kernels::RowBytes(qt, s.head_dim));
    for (int64_t i = 0; i < n * s.n_head; ++i) {
      kernels::QuantizeActivationRow(qt, &q[i * s.head_dim], buf.data(), s.head_dim);
      kernels::DequantizeRow(qt, buf.data(), &q[i * s.head_dim], s.head_dim);
    }
  }
  std::vector<std::vector<float>> keys, values;
  for (int64_t j = 0; j < start + n; ++j) {
    keys.push_back(Dequantized(types.k, cache.KeyRow(layer, j), kvd));
    values.push_back(Dequantized(types.v, cache.ValueRow(layer, j), kvd));
  }
  std::vector<float> out(n * qd);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t h = 0; h < s.n_head; ++h) {
      const int64_t kvh = h / (s.n_head / s.n_head_kv);
      std::vector<double> w(start + t + 1, 0.0);
      double mx = -1e300, sum = 0;
      const double scale = s.scale != 0 ? s.scale : 1 / std::sqrt(static_cast<double>(s.head_dim));
      auto visible = [&](int64_t j) { return s.window == 0 || start + t - j < s.window; };
      for (int64_t j = 0; j <= start + t; ++j) {
        if (!visible(j)) continue;
        double d = 0;
        for (int64_t k = 0; k < s.head_dim; ++k) {
          d += q[t * qd + h * s.head_dim + k] * keys[j][kvh * s.head_dim + k];
        }
        w[j] = d * scale;
        if (s.softcap > 0) w[j] = s.softcap * std::tanh(w[j] / s.softcap);
        mx = std::max(mx, w[j]);
      }
      for (int64_t j = 0; j <= start + t; ++j) {
        if (visible(j)) sum += (w[j] = std::exp(w[j] - mx));
      }
      for (int64_t k = 0; k < s.head_dim; ++k) {
        double acc = 0;
        for (int64_t j = 0; j <= start + t; ++j) {
          if (visible(j)) acc += w[j] / sum * values[j][kvh * s.head_dim + k];
        }
        out[t * qd + h * s.head_dim + k] = static_cast<float>(acc);
      }
    }
  }
  return out;
}

struct Case {
  AttentionShape shape;
  int64_t start, n;
  int threads;
  KvTypes types = {};
};

class AttentionTest : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionTest, MatchesNaiveReference) {
  const Case c = GetParam();
  const int64_t kvd = c.shape.n_head_kv * c.shape.head_dim, qd = c.shape.n_head * c.shape.head_dim;
  ContiguousKvCache cache(2, c.start + c.n + 3, kvd, c.types);
  std::mt19937 rng(11);
  std::normal_distribution<float> nd;
  std::vector<float> k(kvd), v(kvd);
  for (int64_t l = 0; l < 2; ++l) {
    for (int64_t p = 0; p < c.start + c.n; ++p) {
      for (int64_t i = 0; i < kvd; ++i) {
        k[i] = nd(rng);
        v[i] = nd(rng);
      }
      StoreKvRow(c.types.k, k.data(), cache.KeyRow(l, p), kvd);
      StoreKvRow(c.types.v, v.data(), cache.ValueRow(l, p), kvd);
    }
  }
  std::vector<float> q(c.n * qd);
  for (float& v : q) v = nd(rng);
  std::vector<float> out(c.n * qd), scratch;
  kernels::ThreadPool pool(c.threads);
  SequenceAttention(c.shape, q.data(), cache, 1, c.start, c.n, out.data(),
                    c.threads > 1 ? &pool : nullptr, scratch);
  auto want = Reference(c.shape, q, cache, 1, c.start, c.n);
  for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], want[i], 1e-4) << i;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionTest,
    ::testing::Values(Case{{4, 4, 8}, 0, 1, 1},        // single token, no GQA
                      Case{{8, 2, 16}, 0, 9, 1},       // prompt batch, GQA 4:1
                      Case{{6, 3, 5}, 7, 4, 2},        // batch after a prefix, odd head size
                      Case{{2, 1, 64}, 30, 1, 2},      // decode step with history
                      Case{{4, 2, 8, 0, 5}, 3, 6, 2},  // sliding window of 5 (gemma's local layers)
                      Case{{4, 2, 8, 0, 1}, 0, 3, 1},  // a window of one: each token sees itself
                      Case{{4, 4, 16, 1.0f, 0, 2.0f}, 2, 3, 2},  // soft-cap, q pre-scaled
                      // Typed caches: f16 rows through the many-rows kernel (head 64) and
                      // row by row (head 8), q8_0, bf16, and keys and values of two types.
                      Case{{8, 2, 64}, 5, 4, 2, kF16Kv}, Case{{4, 2, 8}, 3, 6, 1, kF16Kv},
                      Case{{8, 2, 32}, 9, 3, 2, {TensorType::kQ8_0, TensorType::kQ8_0}},
                      Case{{4, 2, 64, 0, 5}, 6, 4, 1, {TensorType::kQ8_0, TensorType::kQ8_0}},
                      Case{{4, 4, 16}, 2, 5, 2, {TensorType::kBF16, TensorType::kBF16}},
                      Case{{6, 3, 32}, 4, 2, 2, {TensorType::kQ8_0, TensorType::kF16}},
                      Case{{4, 2, 32}, 3, 3, 2, {TensorType::kQ4_0, TensorType::kQ4_1}},
                      Case{{4, 2, 64}, 2, 4, 1, {TensorType::kQ5_0, TensorType::kQ5_1}}));

}  // namespace
}  // namespace sparrow
