#include "engine/runtime/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/kernels/thread_pool.h"

namespace sparrow {
namespace {

// Naive double-precision causal GQA attention, with the shape's scale, sliding window and
// soft-cap written from their definitions.
std::vector<float> Reference(const AttentionShape& s, const std::vector<float>& q, KvCache& cache,
                             int64_t layer, int64_t start, int64_t n) {
  const int64_t qd = s.n_head * s.head_dim;
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
          d += q[t * qd + h * s.head_dim + k] * cache.Key(layer, j)[kvh * s.head_dim + k];
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
          if (visible(j)) acc += w[j] / sum * cache.Value(layer, j)[kvh * s.head_dim + k];
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
};

class AttentionTest : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionTest, MatchesNaiveReference) {
  const Case c = GetParam();
  const int64_t kvd = c.shape.n_head_kv * c.shape.head_dim, qd = c.shape.n_head * c.shape.head_dim;
  ContiguousKvCache cache(2, c.start + c.n + 3, kvd);
  std::mt19937 rng(11);
  std::normal_distribution<float> nd;
  for (int64_t l = 0; l < 2; ++l) {
    for (int64_t p = 0; p < c.start + c.n; ++p) {
      for (int64_t i = 0; i < kvd; ++i) {
        cache.Key(l, p)[i] = nd(rng);
        cache.Value(l, p)[i] = nd(rng);
      }
    }
  }
  std::vector<float> q(c.n * qd);
  for (float& v : q) v = nd(rng);
  std::vector<float> out(c.n * qd), scratch;
  kernels::ThreadPool pool(c.threads);
  CausalAttention(c.shape, q.data(), cache, 1, c.start, c.n, out.data(),
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
                      Case{{4, 4, 16, 1.0f, 0, 2.0f}, 2, 3, 2}));  // soft-cap, q pre-scaled

}  // namespace
}  // namespace sparrow
