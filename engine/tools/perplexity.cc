#include "engine/tools/perplexity.h"

#include <algorithm>
#include <cmath>

namespace sparrow::tools {

double NegativeLogLikelihood(const float* logits, int64_t n_vocab, int32_t target) {
  float max_logit = logits[0];
  for (int64_t i = 1; i < n_vocab; ++i) max_logit = std::max(max_logit, logits[i]);
  double sum_exp = 0;
  for (int64_t i = 0; i < n_vocab; ++i) sum_exp += std::exp(logits[i] - max_logit);
  return -(static_cast<double>(logits[target] - max_logit) - std::log(sum_exp));
}

Result<PerplexityResult> Perplexity(ForwardPass& fp, const ModelConfig& c,
                                    const std::vector<int32_t>& tokens, int64_t n_ctx, int32_t bos,
                                    const std::function<void(int64_t, int64_t, double)>& on_chunk,
                                    KvTypes kv_types) {
  const auto n_tokens = static_cast<int64_t>(tokens.size());
  if (n_ctx < 8) return InvalidArgument("-c " + std::to_string(n_ctx) + " is too small (>= 8)");
  if (n_tokens < 2 * n_ctx) {
    return InvalidArgument("the text is " + std::to_string(n_tokens) +
                           " tokens; perplexity needs at least 2 * n_ctx = " +
                           std::to_string(2 * n_ctx) + " (use a longer text or a smaller -c)");
  }
  const int64_t n_chunks = n_tokens / n_ctx, first = n_ctx / 2;
  ContiguousKvCache cache(c.n_layer, n_ctx, c.kv_dim(), kv_types);
  std::vector<float> logits;
  std::vector<int32_t> chunk(n_ctx);
  PerplexityResult r;
  double nll = 0, nll2 = 0;
  for (int64_t i = 0; i < n_chunks; ++i) {
    std::copy_n(tokens.begin() + i * n_ctx, n_ctx, chunk.begin());
    if (bos >= 0) chunk[0] = bos;
    SPARROW_RETURN_IF_ERROR(fp.Run(chunk, 0, cache, /*all_logits=*/true, &logits));
    // Position j predicts the text's next token (the original one, not the BOS).
    for (int64_t j = first; j < n_ctx - 1; ++j) {
      const double v =
          NegativeLogLikelihood(&logits[j * c.n_vocab], c.n_vocab, tokens[i * n_ctx + j + 1]);
      nll += v;
      nll2 += v * v;
      ++r.tokens_scored;
    }
    r.running.push_back(std::exp(nll / static_cast<double>(r.tokens_scored)));
    if (on_chunk) on_chunk(i, n_chunks, r.running.back());
  }
  r.chunks = n_chunks;
  const double mean = nll / static_cast<double>(r.tokens_scored);
  r.perplexity = std::exp(mean);
  const double var = nll2 / static_cast<double>(r.tokens_scored) - mean * mean;
  if (var > 0 && r.tokens_scored > 1)
    r.uncertainty = std::sqrt(var / static_cast<double>(r.tokens_scored - 1)) * r.perplexity;
  return r;
}

}  // namespace sparrow::tools
