#include "api/openai/openai_types.h"

#include <cmath>

#include "api/openai/json_fields.h"
#include "api/openai/json_limits.h"
#include "api/openai/openai_chat.h"

namespace sparrow::openai {
namespace {

using json = nlohmann::json;

// Everything but the prompt/messages and the endpoint-specific logprobs fields.
Status ParseCommon(const json& b, GenerationFields* g, std::string* param) {
  SPARROW_RETURN_IF_ERROR(String(b, "model", &g->model, param));
  SPARROW_RETURN_IF_ERROR(Integer(b, "max_tokens", 1, int64_t{1} << 24, &g->max_tokens, param));
  SPARROW_RETURN_IF_ERROR(Number(b, "temperature", 0, 2, &g->temperature, param));
  SPARROW_RETURN_IF_ERROR(Number(b, "top_p", 0, 1, &g->top_p, param));
  if (b.contains("top_p") && b["top_p"].is_number() && g->top_p <= 0) {
    return Bad(param, "top_p", "must be greater than 0 and at most 1");
  }
  std::optional<int64_t> v;
  SPARROW_RETURN_IF_ERROR(Integer(b, "top_k", 0, 1 << 20, &v, param));
  if (v) g->top_k = static_cast<int32_t>(*v);
  float min_p = 0;
  if (b.contains("min_p") && !b["min_p"].is_null()) {
    SPARROW_RETURN_IF_ERROR(Number(b, "min_p", 0, 1, &min_p, param));
    g->min_p = min_p;
  }
  auto seed = b.find("seed");
  if (seed != b.end() && !seed->is_null()) {
    if (!seed->is_number_integer()) return Bad(param, "seed", "must be an integer");
    g->seed = seed->is_number_unsigned() ? seed->get<uint64_t>()
                                         : static_cast<uint64_t>(seed->get<int64_t>());
  }
  auto stop = b.find("stop");
  if (stop != b.end() && !stop->is_null()) {
    if (stop->is_string()) {
      g->stop.push_back(stop->get<std::string>());
    } else if (stop->is_array() && stop->size() <= 4) {
      for (const auto& s : *stop) {
        if (!s.is_string()) return Bad(param, "stop", "must be a string or a list of strings");
        g->stop.push_back(s.get<std::string>());
      }
    } else {
      return Bad(param, "stop", "must be a string or a list of at most 4 strings");
    }
  }
  SPARROW_RETURN_IF_ERROR(Number(b, "presence_penalty", -2, 2, &g->presence_penalty, param));
  SPARROW_RETURN_IF_ERROR(Number(b, "frequency_penalty", -2, 2, &g->frequency_penalty, param));
  v.reset();
  SPARROW_RETURN_IF_ERROR(Integer(b, "n", 1, kMaxN, &v, param));
  if (v) g->n = static_cast<int32_t>(*v);
  SPARROW_RETURN_IF_ERROR(String(b, "user", &g->user, param));
  SPARROW_RETURN_IF_ERROR(ParseOutputControls(b, g, param));
  SPARROW_RETURN_IF_ERROR(ParseOutputFormat(b, &g->format, param));
  SPARROW_RETURN_IF_ERROR(Bool(b, "stream", &g->stream, param));
  auto so = b.find("stream_options");
  if (so != b.end() && !so->is_null()) {
    if (!so->is_object()) return Bad(param, "stream_options", "must be an object");
    if (!g->stream) return Bad(param, "stream_options", "is only allowed when 'stream' is true");
    SPARROW_RETURN_IF_ERROR(Bool(*so, "include_usage", &g->include_usage, param));
  }
  return Status::Ok();
}

}  // namespace

Result<json> ParseRequestBody(std::string_view body, std::string* param) {
  return ParseBoundedJson(body, "", param);
}

Result<ChatCompletionRequest> ParseChatCompletionRequest(const json& b, std::string* param) {
  if (!b.is_object()) return Bad(param, "body", "must be a JSON object");
  ChatCompletionRequest r;
  SPARROW_RETURN_IF_ERROR(ParseCommon(b, &r.gen, param));
  if (!r.gen.max_tokens) {
    std::optional<int64_t> v;
    SPARROW_RETURN_IF_ERROR(Integer(b, "max_completion_tokens", 1, int64_t{1} << 24, &v, param));
    r.gen.max_tokens = v;
  }
  SPARROW_RETURN_IF_ERROR(Bool(b, "logprobs", &r.gen.logprobs, param));
  std::optional<int64_t> top;
  SPARROW_RETURN_IF_ERROR(Integer(b, "top_logprobs", 0, kMaxTopLogprobs, &top, param));
  if (top) {
    if (!r.gen.logprobs && *top > 0) {
      return Bad(param, "top_logprobs", "requires 'logprobs' to be true");
    }
    r.gen.top_logprobs = static_cast<int32_t>(*top);
  }
  SPARROW_RETURN_IF_ERROR(ParseChatMessages(b, &r.messages, param));
  SPARROW_RETURN_IF_ERROR(ParseChatTools(b, &r, param));
  return r;
}

Result<CompletionRequest> ParseCompletionRequest(const json& b, std::string* param) {
  if (!b.is_object()) return Bad(param, "body", "must be a JSON object");
  CompletionRequest r;
  SPARROW_RETURN_IF_ERROR(ParseCommon(b, &r.gen, param));
  std::optional<int64_t> lp;
  SPARROW_RETURN_IF_ERROR(Integer(b, "logprobs", 0, kMaxTopLogprobs, &lp, param));
  if (lp) {
    r.gen.logprobs = true;
    r.gen.top_logprobs = static_cast<int32_t>(*lp);
  }
  SPARROW_RETURN_IF_ERROR(Bool(b, "echo", &r.echo, param));
  auto p = b.find("prompt");
  if (p == b.end()) return Bad(param, "prompt", "is required");
  if (p->is_string()) {
    r.prompt = p->get<std::string>();
  } else if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
    r.prompt = (*p)[0].get<std::string>();
  } else if (p->is_array() && !p->empty() && (*p)[0].is_number_integer()) {
    for (const auto& t : *p) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) {
        return Bad(param, "prompt", "token ids must be non-negative integers");
      }
      r.prompt_tokens.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
  } else {
    return Bad(param, "prompt",
               "must be a string, a list with one string, or a non-empty list of token ids");
  }
  return r;
}

json ErrorBody(const std::string& message, const std::string& type, const std::string& param,
               const std::string& code) {
  json e = {{"message", message}, {"type", type}};
  e["param"] = param.empty() ? json(nullptr) : json(param);
  e["code"] = code.empty() ? json(nullptr) : json(code);
  return json{{"error", e}};
}

std::string Dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace sparrow::openai
