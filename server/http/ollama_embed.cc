#include "server/http/ollama_embed.h"

#include <charconv>
#include <chrono>

#include "api/ollama/ollama_request.h"
#include "api/openai/openai_types.h"
#include "server/http/embeddings_handler.h"
#include "server/http/ollama_generation.h"
#include "server/http/ollama_response.h"

namespace sparrow::server {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

// A vector as JSON text, floats in their shortest exact form (a document of nodes would be
// millions of them for a long list of inputs).
void AppendVector(const std::vector<float>& v, std::string* out) {
  char buf[32];
  *out += '[';
  for (size_t k = 0; k < v.size(); ++k) {
    if (k > 0) *out += ',';
    const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v[k]);
    out->append(buf, ec == std::errc() ? end : buf);
  }
  *out += ']';
}

std::string EmbedText(const std::string& model, const std::vector<std::vector<float>>& vectors,
                      int64_t total_ns, int64_t load_ns, int64_t prompt_tokens) {
  std::string out = R"({"model":)" + nlohmann::json(model).dump() + R"(,"embeddings":[)";
  for (size_t i = 0; i < vectors.size(); ++i) {
    if (i > 0) out += ',';
    AppendVector(vectors[i], &out);
  }
  out += R"(],"total_duration":)" + std::to_string(total_ns) + R"(,"load_duration":)" +
         std::to_string(load_ns) + R"(,"prompt_eval_count":)" + std::to_string(prompt_tokens) + "}";
  return out;
}

std::string LegacyText(const std::vector<float>& v) {
  std::string out = R"({"embedding":)";
  AppendVector(v, &out);
  return out + "}";
}

HttpHandler Embed(bool legacy) {
  return [legacy](HttpExchange& ex) -> asio::awaitable<bool> {
    const Clock::time_point start = Clock::now();
    const auto timeout = ex.opts.write_timeout;
    std::string param;
    auto body = openai::ParseRequestBody(ex.req.body(), &param);
    Result<ollama::EmbedRequest> r = body.ok()
                                         ? (legacy ? ollama::ParseLegacyEmbedRequest(*body, &param)
                                                   : ollama::ParseEmbedRequest(*body, &param))
                                         : Result<ollama::EmbedRequest>(body.status());
    if (!r.ok()) {
      const GenerationError refused{r.status(), param, ""};
      co_return co_await WriteResponse(ex.stream, OllamaRefusal(ex.req, refused), ex.log, timeout);
    }
    EmbeddingSpec spec;
    spec.model = r->model;
    spec.texts = std::move(r->inputs);
    spec.dimensions = r->dimensions;
    spec.fields.input = legacy ? "prompt" : "input";
    // Owned by the lookup, which runs on the preparation pool (see RunOnPreparePool).
    auto load_ms = std::make_shared<double>(0);
    const EngineLookup lookup = [ctx = &ex.ctx, load_ms](const std::string& model) {
      return OllamaEngineFor(*ctx, model, load_ms.get());
    };
    EmbeddingRun run = co_await RunEmbedding(ex, spec, lookup);
    ex.log->model = r->model;
    if (run.client_left) co_return false;
    if (!run.error.status.ok()) {
      co_return co_await WriteResponse(ex.stream, OllamaRefusal(ex.req, run.error), ex.log,
                                       timeout);
    }
    ex.log->prompt_tokens = run.job->prompt_tokens();
    std::vector<std::vector<float>> vectors = run.job->TakeVectors();
    const int64_t total_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
    std::string text =
        legacy ? LegacyText(vectors.at(0))
               : EmbedText(r->model, vectors, total_ns, static_cast<int64_t>(*load_ms * 1e6),
                           run.job->prompt_tokens());
    co_return co_await WriteResponse(
        ex.stream, JsonTextResponse(ex.req, http::status::ok, std::move(text)), ex.log, timeout);
  };
}

}  // namespace

void AddOllamaEmbedRoutes(HttpRouter& r) {
  r.Add({http::verb::post, "/api/embed", AuthScope::kApiKey, Embed(false)});
  r.Add({http::verb::post, "/api/embeddings", AuthScope::kApiKey, Embed(true)});
}

}  // namespace sparrow::server
