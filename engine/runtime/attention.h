#pragma once
// Grouped-query attention of a batch of consecutive tokens of one sequence over its KV cache,
// causal or (an encoder's) over the whole input, in f32 (softmax sums in double, as llama.cpp's
// CPU backend does).
#include <cstdint>
#include <vector>

#include "engine/runtime/kv_cache.h"

namespace sparrow {
namespace kernels {
class ThreadPool;
}

struct AttentionShape {
  int64_t n_head;
  int64_t n_head_kv;
  int64_t head_dim;
  float scale = 0.0f;    // the scores' scale; 0: 1/sqrt(head_dim)
  int64_t window = 0;    // > 0: a token sees only the `window` most recent positions (its own too)
  float softcap = 0.0f;  // > 0: scores = softcap * tanh(scores / softcap) before the softmax
  bool causal = true;    // false: every token sees all positions [0, start_pos + n)
};

// q: n x (n_head*head_dim), token t at position start_pos + t, already rotated. The cache holds
// keys/values for positions [0, start_pos + n). out: n x (n_head*head_dim).
// `scratch` is resized as needed and reused across calls.
void SequenceAttention(const AttentionShape& shape, const float* q, KvCache& cache, int64_t layer,
                       int64_t start_pos, int64_t n, float* out, kernels::ThreadPool* pool,
                       std::vector<float>& scratch);

}  // namespace sparrow
