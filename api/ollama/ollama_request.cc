#include "api/ollama/ollama_request.h"

#include "api/openai/json_fields.h"
#include "api/openai/openai_chat.h"

namespace sparrow::ollama {
namespace {

using json = nlohmann::json;
using openai::Bad;
using openai::Member;

Status NotAnObject(std::string* param) {
  return Bad(param, "body", "must be a JSON object");
}

// Body fields must be an object; the model is required, as Ollama has it.
Status Model(const json& body, std::string* out, std::string* param) {
  if (!body.is_object()) return NotAnObject(param);
  SPARROW_RETURN_IF_ERROR(openai::String(body, "model", out, param));
  if (out->empty()) return Bad(param, "model", "is required");
  return Status::Ok();
}

// A list sparrowd cannot use (images) must be absent or empty.
Status Unsupported(const json& o, const char* key, const std::string& field, const char* why,
                   std::string* param) {
  const json* v = Member(o, key);
  if (v == nullptr) return Status::Ok();
  if (v->is_array() && v->empty()) return Status::Ok();
  if (v->is_string() && v->get<std::string>().empty()) return Status::Ok();
  return Bad(param, field, why);
}

Status Fields(const json& b, GenerationFields* g, std::string* param) {
  SPARROW_RETURN_IF_ERROR(Model(b, &g->model, param));
  SPARROW_RETURN_IF_ERROR(ParseOptions(b, &g->options, param));
  SPARROW_RETURN_IF_ERROR(ParseFormat(b, &g->format, param));
  SPARROW_RETURN_IF_ERROR(openai::Bool(b, "stream", &g->stream, param));
  SPARROW_RETURN_IF_ERROR(ParseKeepAlive(b, &g->keep_alive_s, param));
  if (const json* forced = Member(b, "forced_output"); forced != nullptr) {
    if (!forced->is_string()) return Bad(param, "forced_output", "must be a string");
    g->forced_output = forced->get<std::string>();
  }
  return ParseThink(b, &g->think, param);
}

Status Calls(const json& calls, const std::string& field, Message* m, std::string* param) {
  if (!calls.is_array()) return Bad(param, field, "must be a list of tool calls");
  for (size_t j = 0; j < calls.size(); ++j) {
    const std::string f = field + "[" + std::to_string(j) + "]";
    const json& c = calls[j];
    const json* fn = c.is_object() ? Member(c, "function") : nullptr;
    if (fn == nullptr || !fn->is_object()) return Bad(param, f + ".function", "must be an object");
    ToolCall call;
    SPARROW_RETURN_IF_ERROR(openai::String(*fn, "name", &call.name, param, f + ".function."));
    if (call.name.empty()) return Bad(param, f + ".function.name", "must be a non-empty string");
    const json* args = Member(*fn, "arguments");
    if (args != nullptr) {
      if (!args->is_object()) return Bad(param, f + ".function.arguments", "must be an object");
      call.arguments = *args;
    }
    m->tool_calls.push_back(std::move(call));
  }
  return Status::Ok();
}

Status ParseMessage(const json& m, const std::string& field, Message* out, std::string* param) {
  if (!m.is_object()) return Bad(param, field, "must be an object");
  const std::string p = field + ".";
  SPARROW_RETURN_IF_ERROR(openai::String(m, "role", &out->role, param, p));
  if (out->role != "system" && out->role != "user" && out->role != "assistant" &&
      out->role != "tool") {
    return Bad(param, p + "role",
               "must be one of system, user, assistant, tool; got '" + out->role + "'");
  }
  SPARROW_RETURN_IF_ERROR(openai::String(m, "content", &out->content, param, p));
  SPARROW_RETURN_IF_ERROR(Unsupported(m, "images", p + "images",
                                      "is not supported: the models sparrowd serves read text only",
                                      param));
  SPARROW_RETURN_IF_ERROR(openai::String(m, "thinking", &out->thinking, param, p));
  SPARROW_RETURN_IF_ERROR(openai::String(m, "tool_name", &out->tool_name, param, p));
  const json* calls = Member(m, "tool_calls");
  if (calls != nullptr) {
    if (out->role != "assistant") {
      return Bad(param, p + "tool_calls", "is only allowed on assistant messages");
    }
    SPARROW_RETURN_IF_ERROR(Calls(*calls, p + "tool_calls", out, param));
  }
  return Status::Ok();
}

Status Inputs(const json& v, const std::string& field, std::vector<std::string>* out,
              std::string* param) {
  if (v.is_string()) {
    out->push_back(v.get<std::string>());
    return Status::Ok();
  }
  if (!v.is_array() || v.empty()) {
    return Bad(param, field, "must be a string or a non-empty list of strings");
  }
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string())
      return Bad(param, field + "[" + std::to_string(i) + "]", "must be a string");
    out->push_back(v[i].get<std::string>());
  }
  return Status::Ok();
}

// What both embedding routes share besides the input.
Status EmbedFields(const json& b, EmbedRequest* r, std::string* param) {
  SPARROW_RETURN_IF_ERROR(Model(b, &r->model, param));
  Options ignored;  // checked for types; embeddings sample nothing
  SPARROW_RETURN_IF_ERROR(ParseOptions(b, &ignored, param));
  SPARROW_RETURN_IF_ERROR(ParseKeepAlive(b, &r->keep_alive_s, param));
  SPARROW_RETURN_IF_ERROR(openai::Bool(b, "truncate", &r->truncate, param));
  return openai::Integer(b, "dimensions", 1, 1 << 20, &r->dimensions, param);
}

}  // namespace

Result<ChatRequest> ParseChatRequest(const json& b, std::string* param) {
  ChatRequest r;
  SPARROW_RETURN_IF_ERROR(Fields(b, &r.gen, param));
  const json* msgs = Member(b, "messages");
  if (msgs != nullptr) {
    if (!msgs->is_array()) return Bad(param, "messages", "must be a list of messages");
    for (size_t i = 0; i < msgs->size(); ++i) {
      Message m;
      SPARROW_RETURN_IF_ERROR(
          ParseMessage((*msgs)[i], "messages[" + std::to_string(i) + "]", &m, param));
      r.messages.push_back(std::move(m));
    }
  }
  const json* tools = Member(b, "tools");
  if (tools != nullptr) {
    SPARROW_RETURN_IF_ERROR(openai::ParseToolList(*tools, "tools", &r.tools, param));
  }
  return r;
}

Result<GenerateRequest> ParseGenerateRequest(const json& b, std::string* param) {
  GenerateRequest r;
  SPARROW_RETURN_IF_ERROR(Fields(b, &r.gen, param));
  SPARROW_RETURN_IF_ERROR(openai::String(b, "prompt", &r.prompt, param));
  SPARROW_RETURN_IF_ERROR(openai::String(b, "system", &r.system, param));
  SPARROW_RETURN_IF_ERROR(openai::Bool(b, "raw", &r.raw, param));
  SPARROW_RETURN_IF_ERROR(Unsupported(
      b, "images", "images", "is not supported: the models sparrowd serves read text only", param));
  SPARROW_RETURN_IF_ERROR(Unsupported(
      b, "suffix", "suffix", "is not supported: sparrowd has no fill-in-the-middle prompt", param));
  SPARROW_RETURN_IF_ERROR(Unsupported(
      b, "template", "template",
      "is not supported: sparrowd renders the model's own chat template (or none with raw)",
      param));
  SPARROW_RETURN_IF_ERROR(Unsupported(
      b, "context", "context",
      "is not supported: send the conversation as messages to /api/chat instead", param));
  return r;
}

Result<EmbedRequest> ParseEmbedRequest(const json& b, std::string* param) {
  EmbedRequest r;
  SPARROW_RETURN_IF_ERROR(EmbedFields(b, &r, param));
  const json* input = Member(b, "input");
  if (input == nullptr) return Bad(param, "input", "is required");
  SPARROW_RETURN_IF_ERROR(Inputs(*input, "input", &r.inputs, param));
  return r;
}

Result<EmbedRequest> ParseLegacyEmbedRequest(const json& b, std::string* param) {
  EmbedRequest r;
  SPARROW_RETURN_IF_ERROR(EmbedFields(b, &r, param));
  const json* prompt = Member(b, "prompt");
  if (prompt == nullptr || !prompt->is_string()) return Bad(param, "prompt", "must be a string");
  r.inputs.push_back(prompt->get<std::string>());
  return r;
}

Result<ShowRequest> ParseShowRequest(const json& b, std::string* param) {
  if (!b.is_object()) return NotAnObject(param);
  ShowRequest r;
  SPARROW_RETURN_IF_ERROR(openai::String(b, "model", &r.model, param));
  if (r.model.empty()) SPARROW_RETURN_IF_ERROR(openai::String(b, "name", &r.model, param));
  if (r.model.empty()) return Bad(param, "model", "is required");
  SPARROW_RETURN_IF_ERROR(openai::Bool(b, "verbose", &r.verbose, param));
  return r;
}

std::string ModelName(const std::string& requested) {
  constexpr std::string_view kLatest = ":latest";
  if (requested.size() > kLatest.size() && requested.ends_with(kLatest)) {
    return requested.substr(0, requested.size() - kLatest.size());
  }
  return requested;
}

}  // namespace sparrow::ollama
