#include "engine/runtime/attention.h"

#include <algorithm>
#include <cmath>

#include "engine/kernels/thread_pool.h"
#include "engine/kernels/vec_dot.h"

namespace sparrow {

void CausalAttention(const AttentionShape& s, const float* q, KvCache& cache, int64_t layer,
                     int64_t start_pos, int64_t n, float* out, kernels::ThreadPool* pool,
                     std::vector<float>& scratch) {
  const int64_t q_dim = s.n_head * s.head_dim;
  const int64_t group = s.n_head / s.n_head_kv;
  const int64_t n_ctx = start_pos + n;
  const int n_threads = pool ? pool->size() : 1;
  if (scratch.size() < static_cast<size_t>(n_threads * n_ctx)) scratch.resize(n_threads * n_ctx);
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  // q.k through the F32 dot kernel: vectorised, and identical on every instruction set.
  const kernels::VecDotFn dot_f32 =
      kernels::ActiveKernelTable().vec_dot[static_cast<int>(TensorType::kF32)];

  auto task = [&](int64_t idx, int thread) {
    const int64_t t = idx / s.n_head;
    const int64_t h = idx % s.n_head;
    const int64_t kvh = h / group;
    const int64_t n_keys = start_pos + t + 1;  // causal: this token and everything before it
    const float* qv = q + t * q_dim + h * s.head_dim;
    float* scores = scratch.data() + static_cast<int64_t>(thread) * n_ctx;

    float max_score = -INFINITY;
    for (int64_t j = 0; j < n_keys; ++j) {
      const float* kv = cache.Key(layer, j) + kvh * s.head_dim;
      scores[j] = dot_f32(kv, qv, s.head_dim) * scale;
      max_score = std::max(max_score, scores[j]);
    }
    double sum = 0.0;
    for (int64_t j = 0; j < n_keys; ++j) {
      scores[j] = std::exp(scores[j] - max_score);
      sum += scores[j];
    }
    const float inv = static_cast<float>(1.0 / sum);
    float* o = out + t * q_dim + h * s.head_dim;
    for (int64_t d = 0; d < s.head_dim; ++d) o[d] = 0.0f;
    for (int64_t j = 0; j < n_keys; ++j) {
      const float w = scores[j] * inv;
      const float* vv = cache.Value(layer, j) + kvh * s.head_dim;
      for (int64_t d = 0; d < s.head_dim; ++d) o[d] += w * vv[d];
    }
  };

  const int64_t n_tasks = n * s.n_head;
  if (pool) {
    pool->ParallelFor(n_tasks, task);
  } else {
    for (int64_t i = 0; i < n_tasks; ++i) task(i, 0);
  }
}

}  // namespace sparrow
