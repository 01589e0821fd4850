#include "server/http/embeddings_handler.h"

#include <charconv>

#include "api/openai/openai_embeddings.h"
#include "api/openai/openai_types.h"
#include "server/core/engine_facade.h"
#include "server/http/embedding_job_http.h"
#include "server/http/http_status.h"

namespace sparrow::server {
namespace {

namespace asio = boost::asio;

// The request's JSON in engine terms; false with `*error` filled.
bool ToSpec(const std::string& body, EmbeddingSpec* spec, bool* base64, GenerationError* error) {
  auto r = ParseOpenAiBody(body, &openai::ParseEmbeddingsRequest, error);
  if (!r) return false;
  spec->model = std::move(r->model);
  spec->texts = std::move(r->texts);
  spec->token_lists = std::move(r->token_lists);
  spec->dimensions = r->dimensions;
  *base64 = r->base64;
  if (!r->pooling.empty()) {
    spec->pooling = PoolingFromName(r->pooling);
    if (!spec->pooling) {
      error->status =
          InvalidArgument("'pooling' must be mean, cls or last, got '" + r->pooling + "'");
      error->param = "pooling";
      return false;
    }
  }
  return true;
}

// The answer, written as text: a request of 2048 inputs is millions of numbers, too many for a
// JSON document of nodes. Floats in their shortest exact form.
std::string ResponseText(const std::string& model, const std::vector<std::vector<float>>& vectors,
                         bool base64, int64_t prompt_tokens) {
  std::string out = R"({"object":"list","data":[)";
  char buf[32];
  for (size_t i = 0; i < vectors.size(); ++i) {
    if (i > 0) out += ',';
    out += R"({"object":"embedding","index":)" + std::to_string(i) + R"(,"embedding":)";
    if (base64) {
      out += '"' + openai::Base64Floats(vectors[i]) + '"';
    } else {
      out += '[';
      for (size_t k = 0; k < vectors[i].size(); ++k) {
        if (k > 0) out += ',';
        const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), vectors[i][k]);
        out.append(buf, ec == std::errc() ? end : buf);
      }
      out += ']';
    }
    out += '}';
  }
  out += R"(],"model":)" + nlohmann::json(model).dump() + R"(,"usage":{"prompt_tokens":)" +
         std::to_string(prompt_tokens) + R"(,"total_tokens":)" + std::to_string(prompt_tokens) +
         "}}";
  return out;
}

}  // namespace

asio::awaitable<EmbeddingRun> RunEmbedding(HttpExchange& ex, const EmbeddingSpec& spec,
                                           const EngineLookup& lookup) {
  // Shared, not copied: the starter is copied onto the preparation pool, and a request's inputs
  // may be thousands of texts.
  const JobStarter start = [shared = std::make_shared<const EmbeddingSpec>(spec)](
                               EngineFacade& engine, std::function<void()> on_ready,
                               GenerationError* error) {
    return engine.Embed(*shared, std::move(on_ready), error);
  };
  co_return co_await RunEmbeddingJob(ex, spec.model, spec.fields.model, lookup, start);
}

asio::awaitable<bool> HandleEmbeddings(HttpExchange& ex) {
  EmbeddingSpec spec;
  bool base64 = false;
  GenerationError err;
  if (!ToSpec(ex.req.body(), &spec, &base64, &err)) {
    co_return co_await WriteResponse(ex.stream, JobRefusal(ex.req, err, false), ex.log,
                                     ex.opts.write_timeout);
  }
  const EngineLookup lookup = [ctx = &ex.ctx](const std::string& model) {
    return ctx->EngineFor(model);
  };
  EmbeddingRun run = co_await RunEmbedding(ex, spec, lookup);
  const JobAnswer answer = [base64](EngineFacade& engine, EmbeddingJob& job) {
    return ResponseText(engine.model_id(), job.TakeVectors(), base64, job.prompt_tokens());
  };
  co_return co_await WriteEmbeddingRun(ex, run, answer);
}

}  // namespace sparrow::server
