#include "api/openai/openai_responses.h"

#include <algorithm>

#include "api/openai/json_fields.h"
#include "api/openai/json_limits.h"
#include "api/openai/openai_chat.h"
#include "api/openai/openai_format.h"

namespace sparrow::openai {
namespace {

using json = nlohmann::json;
using Kind = ResponseItemIn::Kind;

// A required non-empty string member, named by its full path.
Status RequiredText(const json& o, const char* key, const std::string& field, std::string* out,
                    std::string* param) {
  const json* v = Member(o, key);
  if (v == nullptr || !v->is_string() || v->get_ref<const std::string&>().empty()) {
    return Bad(param, field + "." + key, "must be a non-empty string");
  }
  *out = v->get<std::string>();
  return Status::Ok();
}

// A string, or a list of parts each {"type": one of `types`, `text_key`: "..."}, joined.
Status TextParts(const json& c, const std::string& field, const std::vector<std::string>& types,
                 const char* text_key, std::string* out, std::string* param) {
  if (c.is_string()) {
    *out = c.get<std::string>();
    return Status::Ok();
  }
  if (!c.is_array()) return Bad(param, field, "must be a string or a list of content parts");
  for (size_t j = 0; j < c.size(); ++j) {
    const json& part = c[j];
    const std::string f = field + "[" + std::to_string(j) + "]";
    if (!part.is_object()) return Bad(param, f, "must be an object");
    const json* type = Member(part, "type");
    const bool known =
        type != nullptr && type->is_string() &&
        std::find(types.begin(), types.end(), type->get<std::string>()) != types.end();
    if (!known) {
      std::string list;
      for (const auto& t : types) list += (list.empty() ? "\"" : ", \"") + t + "\"";
      return Bad(param, f + ".type",
                 "must be " + list + " (sparrow serves text models: no images, files or audio)");
    }
    const json* text = Member(part, text_key);
    if (text == nullptr || !text->is_string()) {
      return Bad(param, f + "." + text_key, "must be a string");
    }
    *out += text->get<std::string>();
  }
  return Status::Ok();
}

Status MessageItem(const json& m, const std::string& field, ResponseItemIn* out,
                   std::string* param) {
  const json* role = Member(m, "role");
  if (role == nullptr || !role->is_string()) return Bad(param, field + ".role", "must be a string");
  out->role = role->get<std::string>();
  if (out->role == "developer") out->role = "system";
  if (out->role != "system" && out->role != "user" && out->role != "assistant") {
    return Bad(param, field + ".role",
               "must be one of user, assistant, system, developer; got '" + out->role + "'");
  }
  const json* content = Member(m, "content");
  if (content == nullptr) return Bad(param, field + ".content", "is required");
  // An assistant message from an earlier response holds output_text parts.
  const std::vector<std::string> types = out->role == "assistant"
                                             ? std::vector<std::string>{"output_text", "input_text"}
                                             : std::vector<std::string>{"input_text"};
  return TextParts(*content, field + ".content", types, "text", &out->text, param);
}

Status FunctionCallItem(const json& c, const std::string& field, ResponseItemIn* out,
                        std::string* param) {
  SPARROW_RETURN_IF_ERROR(RequiredText(c, "call_id", field, &out->call_id, param));
  SPARROW_RETURN_IF_ERROR(RequiredText(c, "name", field, &out->name, param));
  if (!IsValidToolName(out->name)) {
    return Bad(param, field + ".name", "must be 1 to 64 characters of a-z, A-Z, 0-9, '_' and '-'");
  }
  const json* args = Member(c, "arguments");
  if (args == nullptr || !args->is_string()) {
    return Bad(param, field + ".arguments", "must be a string holding a JSON object");
  }
  Result<json> parsed = ParseBoundedJson(args->get<std::string>(), field + ".arguments");
  if (!parsed.ok() || !parsed->is_object()) {
    if (param) *param = field + ".arguments";
    return parsed.ok() ? InvalidArgument("'" + field + ".arguments' must hold a JSON object")
                       : parsed.status();
  }
  out->arguments = args->get<std::string>();
  return Status::Ok();
}

Status FunctionCallOutputItem(const json& o, const std::string& field, ResponseItemIn* out,
                              std::string* param) {
  SPARROW_RETURN_IF_ERROR(RequiredText(o, "call_id", field, &out->call_id, param));
  const json* output = Member(o, "output");
  if (output == nullptr) return Bad(param, field + ".output", "is required");
  return TextParts(*output, field + ".output", {"input_text"}, "text", &out->text, param);
}

// The reasoning text (content parts), or its summary when the item carries only that.
Status ReasoningItem(const json& r, const std::string& field, ResponseItemIn* out,
                     std::string* param) {
  const json* content = Member(r, "content");
  if (content != nullptr) {
    SPARROW_RETURN_IF_ERROR(
        TextParts(*content, field + ".content", {"reasoning_text"}, "text", &out->text, param));
  }
  const json* summary = Member(r, "summary");
  std::string summary_text;
  if (summary != nullptr) {
    if (!summary->is_array()) return Bad(param, field + ".summary", "must be a list");
    SPARROW_RETURN_IF_ERROR(
        TextParts(*summary, field + ".summary", {"summary_text"}, "text", &summary_text, param));
  }
  if (out->text.empty()) out->text = std::move(summary_text);
  return Status::Ok();
}

Status Item(const json& it, const std::string& field, ResponseItemIn* out, std::string* param) {
  if (!it.is_object()) return Bad(param, field, "must be an object");
  const json* type = Member(it, "type");
  if (type != nullptr && !type->is_string()) return Bad(param, field + ".type", "must be a string");
  const std::string t = type == nullptr ? "message" : type->get<std::string>();
  using Parse = Status (*)(const json&, const std::string&, ResponseItemIn*, std::string*);
  static const struct {
    const char* type;
    Kind kind;
    Parse parse;
  } kKinds[] = {{"message", Kind::kMessage, MessageItem},
                {"function_call", Kind::kFunctionCall, FunctionCallItem},
                {"function_call_output", Kind::kFunctionCallOutput, FunctionCallOutputItem},
                {"reasoning", Kind::kReasoning, ReasoningItem}};
  for (const auto& k : kKinds) {
    if (t == k.type) {
      out->kind = k.kind;
      return k.parse(it, field, out, param);
    }
  }
  if (t == "item_reference") {
    return Bad(param, field + ".type",
               "is \"item_reference\", which sparrow does not resolve: send the item itself or "
               "use previous_response_id");
  }
  return Bad(
      param, field + ".type",
      "must be one of message, function_call, function_call_output, reasoning; got '" + t + "'");
}

// Function tools in the Responses shape: {"type": "function", "name", "description",
// "parameters", "strict"}.
Status Tools(const json& b, ResponsesRequest* r, std::string* param) {
  const json* tools = Member(b, "tools");
  if (tools == nullptr) return Status::Ok();
  if (!tools->is_array() || tools->size() > kMaxTools) {
    return Bad(param, "tools", "must be a list of at most " + std::to_string(kMaxTools) + " tools");
  }
  for (size_t i = 0; i < tools->size(); ++i) {
    const json& t = (*tools)[i];
    const std::string field = "tools[" + std::to_string(i) + "]";
    if (!t.is_object()) return Bad(param, field, "must be an object");
    const json* type = Member(t, "type");
    if (type == nullptr || *type != "function") {
      return Bad(param, field + ".type",
                 "must be \"function\" (sparrow has no built-in tools such as web or file search)");
    }
    ToolIn tool;
    SPARROW_RETURN_IF_ERROR(RequiredText(t, "name", field, &tool.name, param));
    if (!IsValidToolName(tool.name)) {
      return Bad(param, field + ".name",
                 "must be 1 to 64 characters of a-z, A-Z, 0-9, '_' and '-'");
    }
    for (const ToolIn& earlier : r->tools) {
      if (earlier.name == tool.name) {
        return Bad(param, field + ".name", "repeats the tool name '" + tool.name + "'");
      }
    }
    const json* desc = Member(t, "description");
    if (desc != nullptr) {
      if (!desc->is_string()) return Bad(param, field + ".description", "must be a string");
      tool.description = desc->get<std::string>();
    }
    const json* params = Member(t, "parameters");
    if (params != nullptr) {
      if (!params->is_object()) {
        return Bad(param, field + ".parameters", "must be a JSON schema object");
      }
      tool.parameters = *params;
    }
    const json* strict = Member(t, "strict");
    if (strict != nullptr && !strict->is_boolean()) {
      return Bad(param, field + ".strict", "must be true or false");
    }
    r->tools.push_back(std::move(tool));
  }
  return Status::Ok();
}

Status ToolChoice(const json& b, ResponsesRequest* r, std::string* param) {
  const json* c = Member(b, "tool_choice");
  if (c == nullptr) return Status::Ok();
  if (c->is_string()) {
    r->tool_choice = c->get<std::string>();
    if (r->tool_choice == "none" || r->tool_choice == "auto" || r->tool_choice == "required") {
      return Status::Ok();
    }
  } else if (c->is_object()) {
    const json* type = Member(*c, "type");
    const json* name = Member(*c, "name");
    if (type != nullptr && *type == "function" && name != nullptr && name->is_string()) {
      r->tool_choice = "function";
      r->tool_choice_name = name->get<std::string>();
      return Status::Ok();
    }
  }
  return Bad(param, "tool_choice",
             "must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"name\": "
             "\"...\"}");
}

// One of `allowed` or null.
Status Choice(const json& o, const char* key, const std::string& field,
              const std::vector<std::string>& allowed, std::optional<std::string>* out,
              std::string* param) {
  const json* v = Member(o, key);
  if (v == nullptr) return Status::Ok();
  if (v->is_string() &&
      std::find(allowed.begin(), allowed.end(), v->get<std::string>()) != allowed.end()) {
    *out = v->get<std::string>();
    return Status::Ok();
  }
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  return Bad(param, field, "must be one of " + list + " or null");
}

Status Reasoning(const json& b, ResponsesRequest* r, std::string* param) {
  const json* reasoning = Member(b, "reasoning");
  if (reasoning == nullptr) return Status::Ok();
  if (!reasoning->is_object()) return Bad(param, "reasoning", "must be an object");
  SPARROW_RETURN_IF_ERROR(Choice(*reasoning, "effort", "reasoning.effort",
                                 {"none", "minimal", "low", "medium", "high"}, &r->reasoning_effort,
                                 param));
  SPARROW_RETURN_IF_ERROR(Choice(*reasoning, "summary", "reasoning.summary",
                                 {"auto", "concise", "detailed"}, &r->reasoning_summary, param));
  return Status::Ok();
}

// text.format: what constrains the answer (openai_format.h), and its echo in the response.
Status TextFormat(const json& b, ResponsesRequest* r, std::string* param) {
  const json* text = Member(b, "text");
  if (text == nullptr) return Status::Ok();
  if (!text->is_object()) return Bad(param, "text", "must be an object");
  const json* format = Member(*text, "format");
  if (format == nullptr) return Status::Ok();
  SPARROW_RETURN_IF_ERROR(ParseTextFormat(*format, &r->gen.format, param));
  r->text_format = *format;
  return Status::Ok();
}

Status Metadata(const json& b, ResponsesRequest* r, std::string* param) {
  const json* m = Member(b, "metadata");
  if (m == nullptr) return Status::Ok();
  if (!m->is_object() || m->size() > kMaxMetadataKeys) {
    return Bad(param, "metadata",
               "must be an object of at most " + std::to_string(kMaxMetadataKeys) + " entries");
  }
  for (const auto& [key, value] : m->items()) {
    if (key.size() > 64) return Bad(param, "metadata", "keys must be at most 64 characters");
    if (!value.is_string() || value.get_ref<const std::string&>().size() > 512) {
      return Bad(param, "metadata." + key, "must be a string of at most 512 characters");
    }
  }
  r->metadata = *m;
  return Status::Ok();
}

// Fields OpenAI has that sparrow cannot honour: refused rather than silently ignored.
Status Unsupported(const json& b, std::string* param) {
  const json* background = Member(b, "background");
  if (background != nullptr && *background != false) {
    return Bad(param, "background", "is not supported: responses run while the request waits");
  }
  const json* truncation = Member(b, "truncation");
  if (truncation != nullptr && *truncation != "disabled") {
    return Bad(param, "truncation",
               "must be \"disabled\": sparrow does not drop input items to fit the context");
  }
  if (Member(b, "conversation") != nullptr) {
    return Bad(param, "conversation",
               "is not supported (no Conversations API): use previous_response_id");
  }
  return Status::Ok();
}

Status Input(const json& b, ResponsesRequest* r, std::string* param) {
  const json* input = Member(b, "input");
  if (input == nullptr) return Bad(param, "input", "is required");
  if (input->is_string()) {
    r->input_items = json::array({{{"type", "message"}, {"role", "user"}, {"content", *input}}});
  } else if (input->is_array() && !input->empty() && input->size() <= kMaxResponseInputItems) {
    r->input_items = *input;
  } else {
    return Bad(param, "input",
               "must be a string or a non-empty list of at most " +
                   std::to_string(kMaxResponseInputItems) + " items");
  }
  return ParseResponseItems(r->input_items, "input", &r->input, param);
}

}  // namespace

Status ParseResponseItems(const json& items, const std::string& field,
                          std::vector<ResponseItemIn>* out, std::string* param) {
  if (!items.is_array()) return Bad(param, field, "must be a list of items");
  for (size_t i = 0; i < items.size(); ++i) {
    ResponseItemIn item;
    SPARROW_RETURN_IF_ERROR(Item(items[i], field + "[" + std::to_string(i) + "]", &item, param));
    out->push_back(std::move(item));
  }
  return Status::Ok();
}

Result<ResponsesRequest> ParseResponsesRequest(const json& b, std::string* param) {
  if (!b.is_object()) return Bad(param, "body", "must be a JSON object");
  ResponsesRequest r;
  GenerationFields& g = r.gen;
  SPARROW_RETURN_IF_ERROR(String(b, "model", &g.model, param));
  SPARROW_RETURN_IF_ERROR(
      Integer(b, "max_output_tokens", 1, int64_t{1} << 24, &g.max_tokens, param));
  SPARROW_RETURN_IF_ERROR(Number(b, "temperature", 0, 2, &g.temperature, param));
  SPARROW_RETURN_IF_ERROR(Number(b, "top_p", 0, 1, &g.top_p, param));
  if (const json* top_p = Member(b, "top_p"); top_p != nullptr && g.top_p <= 0) {
    return Bad(param, "top_p", "must be greater than 0 and at most 1");
  }
  SPARROW_RETURN_IF_ERROR(String(b, "user", &g.user, param));
  SPARROW_RETURN_IF_ERROR(Bool(b, "stream", &g.stream, param));
  SPARROW_RETURN_IF_ERROR(ParseOutputControls(b, &g, param));  // logit_bias, forced_output
  SPARROW_RETURN_IF_ERROR(String(b, "instructions", &r.instructions, param));
  SPARROW_RETURN_IF_ERROR(Bool(b, "store", &r.store, param));
  SPARROW_RETURN_IF_ERROR(String(b, "previous_response_id", &r.previous_response_id, param));
  if (Member(b, "previous_response_id") != nullptr && r.previous_response_id.empty()) {
    return Bad(param, "previous_response_id", "must be a non-empty string");
  }
  SPARROW_RETURN_IF_ERROR(Bool(b, "parallel_tool_calls", &r.parallel_tool_calls, param));
  SPARROW_RETURN_IF_ERROR(Tools(b, &r, param));
  SPARROW_RETURN_IF_ERROR(ToolChoice(b, &r, param));
  SPARROW_RETURN_IF_ERROR(Reasoning(b, &r, param));
  SPARROW_RETURN_IF_ERROR(TextFormat(b, &r, param));
  SPARROW_RETURN_IF_ERROR(Metadata(b, &r, param));
  SPARROW_RETURN_IF_ERROR(Unsupported(b, param));
  SPARROW_RETURN_IF_ERROR(Input(b, &r, param));
  return r;
}

}  // namespace sparrow::openai
