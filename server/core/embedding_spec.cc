#include "server/core/embedding_spec.h"

#include "server/core/served_model.h"

namespace sparrow::server {
bool ResolveEmbedding(const ServedModel& m, const EmbeddingSpec& spec, ResolvedEmbedding* out,
                      GenerationError* error) {
  const EmbeddingSpec::FieldNames& f = spec.fields;
  if (!CheckRequestedModel(m, spec.model, f.model, error)) return false;
  const size_t count = spec.texts.size() + spec.token_lists.size();
  if (!spec.texts.empty() && !spec.token_lists.empty()) {
    return RefuseRequest(error, InvalidArgument("'" + f.input + "' mixes texts and token lists"),
                         f.input);
  }
  if (count == 0)
    return RefuseRequest(error, InvalidArgument("'" + f.input + "' is empty"), f.input);
  if (count > kMaxEmbeddingInputs) {
    return RefuseRequest(
        error,
        InvalidArgument("'" + f.input + "' has " + std::to_string(count) + " entries; at most " +
                        std::to_string(kMaxEmbeddingInputs) + " are allowed"),
        f.input);
  }
  out->pooling = spec.pooling.value_or(m.pooling);
  if (out->pooling == PoolingType::kNone) {
    return RefuseRequest(
        error,
        InvalidArgument(
            std::string("pooling 'none' gives one vector per token, which this API does "
                        "not carry; ") +
            (spec.pooling ? "ask for '" + f.pooling + "' mean, cls or last"
                          : "start the server with --pooling mean, cls or last")),
        f.pooling);
  }
  if (out->pooling == PoolingType::kRank) {
    return RefuseRequest(
        error,
        InvalidArgument(std::string("pooling 'rank' gives relevance scores, not embeddings; ") +
                        (spec.pooling ? "ask for '" + f.pooling + "' mean, cls or last"
                                      : "this model is a reranker: use the rerank API, or start "
                                        "the server with --pooling mean, cls or last")),
        f.pooling);
  }
  const int64_t n_embd = m.model->config().n_embd;
  out->dimensions = spec.dimensions.value_or(n_embd);
  if (out->dimensions < 1 || out->dimensions > n_embd) {
    return RefuseRequest(
        error,
        InvalidArgument("'" + f.dimensions + "' is " + std::to_string(out->dimensions) +
                        "; this model's embeddings have 1 to " + std::to_string(n_embd) +
                        " dimensions"),
        f.dimensions);
  }
  const Tokenizer& tok = *m.tokenizer;
  out->inputs.clear();
  out->inputs.reserve(count);
  out->prompt_tokens = 0;
  for (size_t i = 0; i < count; ++i) {
    const std::string field = f.input + "[" + std::to_string(i) + "]";
    std::vector<int32_t> ids;
    if (!spec.texts.empty()) {
      ids = tok.Tokenize(spec.texts[i], /*add_special=*/true, /*parse_special=*/false);
    } else {
      ids = spec.token_lists[i];
      for (size_t k = 0; k < ids.size(); ++k) {
        if (!tok.IsValid(ids[k])) {
          return RefuseRequest(
              error,
              InvalidArgument("'" + field + "[" + std::to_string(k) + "]' is " +
                              std::to_string(ids[k]) + ", outside the vocabulary of " +
                              std::to_string(tok.n_vocab())),
              f.input);
        }
      }
    }
    if (ids.empty()) {
      return RefuseRequest(error, InvalidArgument("'" + field + "' gives no tokens"), f.input);
    }
    const int64_t n = static_cast<int64_t>(ids.size());
    if (n > m.n_ctx) {
      return RefuseRequest(error,
                           InvalidArgument("'" + field + "' has " + std::to_string(n) +
                                           " tokens; this model's maximum context length is " +
                                           std::to_string(m.n_ctx) + " tokens"),
                           f.input, "context_length_exceeded");
    }
    out->prompt_tokens += n;
    if (out->prompt_tokens > kMaxEmbeddingTokens) {
      return RefuseRequest(
          error,
          InvalidArgument("'" + f.input + "' has more than " + std::to_string(kMaxEmbeddingTokens) +
                          " tokens in all; send fewer inputs per request"),
          f.input);
    }
    out->inputs.push_back(std::move(ids));
  }
  return true;
}

}  // namespace sparrow::server
