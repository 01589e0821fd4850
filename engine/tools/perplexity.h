#pragma once
// Perplexity the way llama.cpp's llama-perplexity computes it: the text is cut into chunks of
// n_ctx tokens, each chunk starts with BOS (its first token replaced), is computed from an
// empty cache, and only the second half of each chunk is scored (every token then has at least
// n_ctx/2 tokens of context); negative log-likelihoods are summed in double.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/common/result.h"
#include "engine/runtime/forward_pass.h"

namespace sparrow::tools {

// -log softmax(logits)[target], with the softmax's sum in double as llama.cpp takes it.
double NegativeLogLikelihood(const float* logits, int64_t n_vocab, int32_t target);

struct PerplexityResult {
  double perplexity = 0;
  double uncertainty = 0;  // llama.cpp's "+/-": the standard error of the mean NLL, times PPL
  int64_t tokens_scored = 0;
  int64_t chunks = 0;
  std::vector<double> running;  // the estimate after each chunk
};

// Scores `tokens` (the whole text, BOS first if the model adds one) with `fp` in chunks of
// n_ctx. Needs at least 2 * n_ctx tokens (as llama-perplexity). `bos` replaces each chunk's
// first token when >= 0. `on_chunk(i, n, estimate)` is called after every chunk. The KV cache
// stores `kv_types`.
Result<PerplexityResult> Perplexity(ForwardPass& fp, const ModelConfig& config,
                                    const std::vector<int32_t>& tokens, int64_t n_ctx, int32_t bos,
                                    const std::function<void(int64_t, int64_t, double)>& on_chunk,
                                    KvTypes kv_types = {});

}  // namespace sparrow::tools
