#include "engine/runtime/attention.h"

#include <algorithm>
#include <cmath>

#include "engine/kernels/attention_ops.h"
#include "engine/kernels/thread_pool.h"

namespace sparrow {

void CausalAttention(const AttentionShape& s, const float* q, KvCache& cache, int64_t layer,
                     int64_t start_pos, int64_t n, float* out, kernels::ThreadPool* pool,
                     std::vector<float>& scratch) {
  const int64_t q_dim = s.n_head * s.head_dim;
  const int64_t group = s.n_head / s.n_head_kv;
  const int64_t n_ctx = start_pos + n;
  const int n_threads = pool ? pool->size() : 1;
  if (scratch.size() < static_cast<size_t>(n_threads * n_ctx)) scratch.resize(n_threads * n_ctx);
  const float scale = s.scale != 0.0f ? s.scale : 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  // The cache rows looked up once per call (the cache may be paged: one virtual call per row),
  // then shared by every head and token.
  thread_local std::vector<const float*> keys, values;
  keys.resize(n_ctx);
  values.resize(n_ctx);
  for (int64_t j = 0; j < n_ctx; ++j) {
    keys[j] = cache.Key(layer, j);
    values[j] = cache.Value(layer, j);
  }
  const float* const* key_rows = keys.data();
  const float* const* value_rows = values.data();

  auto task = [&](int64_t idx, int thread) {
    const int64_t t = idx / s.n_head;
    const int64_t h = idx % s.n_head;
    const int64_t offset = (h / group) * s.head_dim;  // this head's kv head inside a cache row
    // Causal: this token and everything before it, or only the window's most recent part.
    const int64_t end = start_pos + t + 1;
    const int64_t first = s.window > 0 ? std::max<int64_t>(0, end - s.window) : 0;
    const int64_t n_keys = end - first;
    float* scores = scratch.data() + static_cast<int64_t>(thread) * n_ctx;
    kernels::AttentionScores(q + t * q_dim + h * s.head_dim, key_rows + first, offset, n_keys,
                             s.head_dim, scale, scores);
    if (s.softcap > 0.0f) {
      for (int64_t j = 0; j < n_keys; ++j)
        scores[j] = s.softcap * std::tanh(scores[j] * (1.0f / s.softcap));
    }
    const float inv = static_cast<float>(1.0 / kernels::ExpMinusMax(scores, n_keys));
    for (int64_t j = 0; j < n_keys; ++j) scores[j] *= inv;
    kernels::AttentionMix(scores, value_rows + first, offset, n_keys, s.head_dim,
                          out + t * q_dim + h * s.head_dim);
  };

  const int64_t n_tasks = n * s.n_head;
  if (pool) {
    pool->ParallelFor(n_tasks, task);
  } else {
    for (int64_t i = 0; i < n_tasks; ++i) task(i, 0);
  }
}

}  // namespace sparrow
