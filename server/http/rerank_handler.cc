#include "server/http/rerank_handler.h"

#include "api/openai/openai_rerank.h"
#include "server/core/engine_facade.h"
#include "server/core/server_context.h"
#include "server/http/embedding_job_http.h"

namespace sparrow::server {
namespace {

namespace asio = boost::asio;

// The request's JSON in engine terms; false with `*error` filled.
bool ToSpec(const std::string& body, RerankSpec* spec, bool* return_documents,
            GenerationError* error) {
  auto r = ParseOpenAiBody(body, &openai::ParseRerankRequest, error);
  if (!r) return false;
  spec->model = std::move(r->model);
  spec->query = std::move(r->query);
  spec->documents = std::move(r->documents);
  spec->top_n = r->top_n;
  *return_documents = r->return_documents;
  return true;
}

}  // namespace

std::string RerankResponseText(const std::string& model, const std::vector<float>& scores,
                               std::optional<int64_t> top_n,
                               const std::vector<std::string>* documents, int64_t prompt_tokens) {
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (size_t i : RankedIndices(scores, top_n)) {
    nlohmann::ordered_json r = {{"index", i}, {"relevance_score", scores[i]}};
    if (documents != nullptr) r["document"] = {{"text", (*documents)[i]}};
    results.push_back(std::move(r));
  }
  const nlohmann::ordered_json answer = {
      {"model", model},
      {"object", "list"},
      {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}},
      {"results", std::move(results)}};
  return answer.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

asio::awaitable<bool> HandleRerank(HttpExchange& ex) {
  RerankSpec spec;
  bool return_documents = false;
  GenerationError err;
  if (!ToSpec(ex.req.body(), &spec, &return_documents, &err)) {
    co_return co_await WriteResponse(ex.stream, JobRefusal(ex.req, err, false), ex.log,
                                     ex.opts.write_timeout);
  }
  const EngineLookup lookup = [ctx = &ex.ctx](const std::string& model) {
    return ctx->EngineFor(model);
  };
  // Shared, not copied: the starter is copied onto the preparation pool (up to 1000 documents).
  const auto shared = std::make_shared<const RerankSpec>(std::move(spec));
  const JobStarter start = [shared](EngineFacade& engine, std::function<void()> on_ready,
                                    GenerationError* error) {
    return engine.Rerank(*shared, std::move(on_ready), error);
  };
  EmbeddingRun run =
      co_await RunEmbeddingJob(ex, shared->model, shared->fields.model, lookup, start);
  const JobAnswer answer = [&](EngineFacade& engine, EmbeddingJob& job) {
    std::vector<float> scores;
    for (const std::vector<float>& v : job.TakeVectors()) scores.push_back(v.empty() ? 0 : v[0]);
    return RerankResponseText(engine.model_id(), scores, shared->top_n,
                              return_documents ? &shared->documents : nullptr, job.prompt_tokens());
  };
  co_return co_await WriteEmbeddingRun(ex, run, answer);
}

}  // namespace sparrow::server
