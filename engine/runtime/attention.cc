#include "engine/runtime/attention.h"

#include <algorithm>
#include <cmath>

#include "engine/kernels/attention_ops.h"
#include "engine/kernels/thread_pool.h"
#include "engine/kernels/vec_dot.h"

namespace sparrow {

void SequenceAttention(const AttentionShape& s, const float* q, KvCache& cache, int64_t layer,
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
  thread_local std::vector<const uint8_t*> keys, values;
  keys.resize(n_ctx);
  values.resize(n_ctx);
  for (int64_t j = 0; j < n_ctx; ++j) {
    keys[j] = cache.KeyRow(layer, j);
    values[j] = cache.ValueRow(layer, j);
  }
  const KvTypes types = cache.types();
  const TensorType q_type = kernels::VecDotType(types.k);
  // A head's slice of a row: heads are whole blocks (CheckKvTypes).
  const size_t k_head = KvRowBytes(types.k, s.head_dim), v_head = KvRowBytes(types.v, s.head_dim);
  const size_t q_act_bytes = KvRowBytes(q_type, s.head_dim);
  const bool f32_k = types.k == TensorType::kF32, f32_v = types.v == TensorType::kF32;
  // The f32 loops take float rows.
  thread_local std::vector<const float*> f32_keys, f32_values;
  if (f32_k) f32_keys.resize(n_ctx);
  if (f32_v) f32_values.resize(n_ctx);
  for (int64_t j = 0; j < n_ctx; ++j) {
    if (f32_k) f32_keys[j] = reinterpret_cast<const float*>(keys[j]);
    if (f32_v) f32_values[j] = reinterpret_cast<const float*>(values[j]);
  }
  const uint8_t* const* key_rows = keys.data();
  const uint8_t* const* value_rows = values.data();
  const float* const* f32_key_rows = f32_keys.data();
  const float* const* f32_value_rows = f32_values.data();

  auto task = [&](int64_t idx, int thread) {
    const int64_t t = idx / s.n_head;
    const int64_t h = idx % s.n_head;
    const int64_t kv_head = h / group;  // this head's kv head inside a cache row
    // Causal: this token and everything before it, or only the window's most recent part;
    // otherwise the whole input.
    const int64_t end = s.causal ? start_pos + t + 1 : n_ctx;
    const int64_t first = s.window > 0 ? std::max<int64_t>(0, end - s.window) : 0;
    const int64_t n_keys = end - first;
    float* scores = scratch.data() + static_cast<int64_t>(thread) * n_ctx;
    const float* qh = q + t * q_dim + h * s.head_dim;
    if (f32_k) {
      kernels::AttentionScores(qh, f32_key_rows + first, kv_head * s.head_dim, n_keys, s.head_dim,
                               scale, scores);
    } else {
      thread_local std::vector<uint8_t> q_act;
      q_act.resize(q_act_bytes);
      kernels::QuantizeActivationRow(q_type, qh, q_act.data(), s.head_dim);
      kernels::AttentionScoresTyped(types.k, q_act.data(), key_rows + first, kv_head * k_head,
                                    n_keys, s.head_dim, scale, scores);
    }
    if (s.softcap > 0.0f) {
      for (int64_t j = 0; j < n_keys; ++j)
        scores[j] = s.softcap * std::tanh(scores[j] * (1.0f / s.softcap));
    }
    const float inv = static_cast<float>(1.0 / kernels::ExpMinusMax(scores, n_keys));
    for (int64_t j = 0; j < n_keys; ++j) scores[j] *= inv;
    float* o = out + t * q_dim + h * s.head_dim;
    if (f32_v) {
      kernels::AttentionMix(scores, f32_value_rows + first, kv_head * s.head_dim, n_keys,
                            s.head_dim, o);
    } else {
      kernels::AttentionMixTyped(types.v, scores, value_rows + first, kv_head * v_head, n_keys,
                                 s.head_dim, o);
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
