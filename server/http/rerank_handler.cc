#include "server/http/rerank_handler.h"

#include <boost/asio/this_coro.hpp>

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
  const HttpRequest& req = ex.req;
  RequestLog* log = ex.log;
  const auto timeout = ex.opts.write_timeout;
  RerankSpec spec;
  bool return_documents = false;
  GenerationError err;
  if (!ToSpec(req.body(), &spec, &return_documents, &err)) {
    co_return co_await WriteResponse(ex.stream, JobRefusal(req, err, false), log, timeout);
  }
  // The model the request names (loaded on demand), kept until the job is done: it holds the
  // scheduler the documents run on. `spec` by reference: the starter has run when the
  // exchange ends.
  auto engine = std::make_shared<std::optional<EngineFacade>>();
  const JobStarter start = [&ex, engine, &spec](std::function<void()> on_ready,
                                                GenerationError* e) {
    Result<EngineFacade> named = ex.ctx.EngineFor(spec.model);
    if (!named.ok()) {
      *e = {named.status(), spec.fields.model, ModelErrorCode(named.status())};
      return std::shared_ptr<EmbeddingJob>();
    }
    *engine = std::move(named).value();
    ex.log->model = (*engine)->model_id();  // the exchange waits for this thread
    return (*engine)->Rerank(spec, std::move(on_ready), e);
  };
  const JobAnswer answer = [&](EmbeddingJob& job) {
    std::vector<float> scores;
    for (const std::vector<float>& v : job.TakeVectors()) scores.push_back(v.empty() ? 0 : v[0]);
    return RerankResponseText((*engine)->model_id(), scores, spec.top_n,
                              return_documents ? &spec.documents : nullptr, job.prompt_tokens());
  };
  co_return co_await AnswerEmbeddingJob(ex, start, answer);
}

}  // namespace sparrow::server
