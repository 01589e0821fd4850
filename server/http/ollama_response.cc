#include "server/http/ollama_response.h"

#include <ctime>

#include "api/openai/json_limits.h"
#include "server/http/http_status.h"

namespace sparrow::server {
namespace {

using json = nlohmann::json;

// A call's arguments as the object Ollama's clients expect (the model wrote them as text).
json Arguments(const std::string& text) {
  auto parsed = openai::ParseBoundedJson(text, "arguments");
  if (parsed.ok() && parsed->is_object()) return *parsed;
  return json::object();  // the call parser hands on only objects; never seen
}

json Message(const ChatDelta& d) {
  json m = {{"role", "assistant"}, {"content", d.content}};
  if (!d.reasoning.empty()) m["thinking"] = d.reasoning;
  if (!d.tool_calls.empty()) {
    json calls = json::array();
    for (size_t i = 0; i < d.tool_calls.size(); ++i) {
      const ChatToolCall& c = d.tool_calls[i];
      calls.push_back({{"id", c.id},
                       {"function",
                        {{"index", d.first_call_index + static_cast<int>(i)},
                         {"name", c.name},
                         {"arguments", Arguments(c.arguments)}}}});
    }
    m["tool_calls"] = std::move(calls);
  }
  return m;
}

}  // namespace

std::string OllamaTime(std::chrono::system_clock::time_point t) {
  const auto since = t.time_since_epoch();
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(since);
  const int64_t nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(since - secs).count();
  const std::time_t tt = static_cast<std::time_t>(secs.count());
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  const size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof(buf) - n, ".%09lldZ", static_cast<long long>(nanos));
  return buf;
}

json OllamaChunk(bool chat, const std::string& model, const ChatDelta& delta) {
  json j = {{"model", model}, {"created_at", OllamaTime(std::chrono::system_clock::now())}};
  if (chat) {
    j["message"] = Message(delta);
  } else {
    j["response"] = delta.content;
    if (!delta.reasoning.empty()) j["thinking"] = delta.reasoning;
  }
  j["done"] = false;
  return j;
}

json OllamaDone(bool chat, const std::string& model, const ChatDelta& delta,
                const std::string& done_reason, const OllamaTimings* t) {
  json j = OllamaChunk(chat, model, delta);
  j["done"] = true;
  j["done_reason"] = done_reason;
  if (t != nullptr) {
    j["total_duration"] = t->total_ns;
    j["load_duration"] = t->load_ns;
    j["prompt_eval_count"] = t->prompt_eval_count;
    j["prompt_eval_duration"] = t->prompt_eval_ns;
    j["eval_count"] = t->eval_count;
    j["eval_duration"] = t->eval_ns;
  }
  return j;
}

HttpResponse OllamaError(const HttpRequest& req, http::status status, const std::string& message) {
  return JsonResponse(req, status, json{{"error", message}});
}

HttpResponse OllamaRefusal(const HttpRequest& req, const GenerationError& err) {
  HttpResponse res = OllamaError(req, HttpStatusFor(err.status.code()), err.status.message());
  const StatusCode c = err.status.code();
  if (c == StatusCode::kUnavailable || c == StatusCode::kResourceExhausted) {
    res.set(http::field::retry_after, "1");
  }
  return res;
}

}  // namespace sparrow::server
