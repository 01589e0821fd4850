#include "server/core/rerank_spec.h"

#include <algorithm>
#include <numeric>

#include "server/core/served_model.h"

namespace sparrow::server {

bool ResolveRerank(const ServedModel& m, const RerankSpec& spec, ResolvedEmbedding* out,
                   GenerationError* error) {
  const RerankSpec::FieldNames& f = spec.fields;
  if (!CheckRequestedModel(m, spec.model, f.model, error)) return false;
  const ClassifierHead& head = m.model->weights().classifier;
  if (!head.present()) {
    return RefuseRequest(
        error,
        InvalidArgument("model '" + m.model_id +
                        "' has no classification head (cls.weight or cls.output.weight), so it "
                        "cannot rerank; serve a reranker such as bge-reranker or Qwen3-Reranker"),
        f.model, "model_not_reranker");
  }
  if (spec.documents.empty()) {
    return RefuseRequest(error, InvalidArgument("'" + f.documents + "' is empty"), f.documents);
  }
  if (spec.documents.size() > kMaxRerankDocuments) {
    return RefuseRequest(
        error,
        InvalidArgument("'" + f.documents + "' has " + std::to_string(spec.documents.size()) +
                        " entries; at most " + std::to_string(kMaxRerankDocuments) +
                        " are allowed"),
        f.documents);
  }
  if (spec.top_n && *spec.top_n < 1) {
    return RefuseRequest(error,
                         InvalidArgument("'" + f.top_n + "' is " + std::to_string(*spec.top_n) +
                                         "; it must be at least 1"),
                         f.top_n);
  }
  out->pooling = PoolingType::kRank;
  out->dimensions = head.n_scores();
  out->inputs.clear();
  out->inputs.reserve(spec.documents.size());
  out->prompt_tokens = 0;
  for (size_t i = 0; i < spec.documents.size(); ++i) {
    const std::string field = f.documents + "[" + std::to_string(i) + "]";
    std::vector<int32_t> ids = m.rerank.Tokenize(*m.tokenizer, spec.query, spec.documents[i]);
    if (ids.empty()) {
      return RefuseRequest(error, InvalidArgument("'" + field + "' gives no tokens"), f.documents);
    }
    const int64_t n = static_cast<int64_t>(ids.size());
    if (n > m.n_ctx) {
      return RefuseRequest(
          error,
          InvalidArgument("'" + f.query + "' and '" + field + "' make " + std::to_string(n) +
                          " tokens; this model's maximum context length is " +
                          std::to_string(m.n_ctx) + " tokens"),
          f.documents, "context_length_exceeded");
    }
    out->prompt_tokens += n;
    if (out->prompt_tokens > kMaxEmbeddingTokens) {
      return RefuseRequest(error,
                           InvalidArgument("'" + f.documents + "' with the query make more than " +
                                           std::to_string(kMaxEmbeddingTokens) +
                                           " tokens in all; send fewer documents per request"),
                           f.documents);
    }
    out->inputs.push_back(std::move(ids));
  }
  return true;
}

std::vector<size_t> RankedIndices(const std::vector<float>& scores, std::optional<int64_t> top_n) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  if (top_n && *top_n >= 0 && static_cast<size_t>(*top_n) < order.size()) order.resize(*top_n);
  return order;
}

}  // namespace sparrow::server
