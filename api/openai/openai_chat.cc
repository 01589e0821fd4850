#include "api/openai/openai_chat.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <set>

#include "api/openai/json_fields.h"
#include "api/openai/json_limits.h"
#include "api/openai/openai_image.h"

namespace sparrow::openai {
namespace {

using json = nlohmann::json;

// Chat message content: a string, or a list of parts: {"type": "text", "text": ...} and, in
// user messages, {"type": "image_url", ...} (openai_image.h), each image kept at its place
// among the text.
Status MessageContent(const json& c, const std::string& field, ImageBudget* images,
                      ChatMessageIn* msg, std::string* param) {
  if (c.is_string()) {
    msg->content = c.get<std::string>();
    return Status::Ok();
  }
  if (c.is_null()) return Status::Ok();
  if (!c.is_array()) return Bad(param, field, "must be a string or a list of content parts");
  for (size_t i = 0; i < c.size(); ++i) {
    const json& part = c[i];
    const std::string at = field + "[" + std::to_string(i) + "]";
    // Every member is type-checked before it is read: json::value() and get() throw on a
    // mismatch, and nothing may escape the parser.
    const json* type = part.is_object() ? Member(part, "type") : nullptr;
    if (type == nullptr || !type->is_string()) {
      return Bad(param, at,
                 "must be a content part: {\"type\": \"text\", \"text\": \"...\"} or "
                 "{\"type\": \"image_url\", \"image_url\": {\"url\": \"data:...\"}}");
    }
    if (*type == "image_url") {
      if (msg->role != "user") {
        return Bad(
            param, at,
            "is an image in a message of role '" + msg->role + "': only user messages take images");
      }
      ImagePartIn image;
      SPARROW_RETURN_IF_ERROR(ParseImagePart(part, at, images, &image, param));
      image.offset = msg->content.size();
      msg->images.push_back(std::move(image));
      continue;
    }
    const json* text = Member(part, "text");
    if (*type != "text") {
      return Bad(param, at,
                 "has type '" + type->get<std::string>() +
                     "': content parts are \"text\" or \"image_url\"");
    }
    if (text == nullptr || !text->is_string()) {
      return Bad(param, at, "must have a string \"text\"");
    }
    msg->content += text->get<std::string>();
  }
  return Status::Ok();
}

// A string member named by its full path in the request ("messages[2].tool_call_id").
Status Text(const json& o, const char* key, const std::string& field, std::string* out,
            std::string* param) {
  const json* v = Member(o, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_string()) return Bad(param, field, "must be a string");
  *out = v->get<std::string>();
  return Status::Ok();
}

Status ToolCalls(const json& calls, const std::string& field, ChatMessageIn* msg,
                 std::string* param) {
  if (!calls.is_array()) return Bad(param, field, "must be a list of tool calls");
  for (size_t j = 0; j < calls.size(); ++j) {
    const json& c = calls[j];
    const std::string f = field + "[" + std::to_string(j) + "]";
    if (!c.is_object()) return Bad(param, f, "must be an object");
    ToolCallIn call;
    SPARROW_RETURN_IF_ERROR(Text(c, "id", f + ".id", &call.id, param));
    if (call.id.empty()) return Bad(param, f + ".id", "must be a non-empty string");
    const json* type = Member(c, "type");
    if (type != nullptr && *type != "function")
      return Bad(param, f + ".type", "must be \"function\"");
    const json* fn = Member(c, "function");
    if (fn == nullptr || !fn->is_object()) return Bad(param, f + ".function", "must be an object");
    const json* name = Member(*fn, "name");
    if (name == nullptr || !name->is_string() || name->get<std::string>().empty()) {
      return Bad(param, f + ".function.name", "must be a non-empty string");
    }
    call.name = name->get<std::string>();
    const json* args = Member(*fn, "arguments");
    if (args == nullptr || !args->is_string()) {
      return Bad(param, f + ".function.arguments", "must be a string holding a JSON object");
    }
    Result<json> parsed = ParseBoundedJson(args->get<std::string>(), f + ".function.arguments");
    if (!parsed.ok()) {
      if (param) *param = f + ".function.arguments";
      return parsed.status();
    }
    if (!parsed->is_object()) {
      return Bad(param, f + ".function.arguments", "must be a string holding a JSON object");
    }
    call.arguments = args->get<std::string>();
    msg->tool_calls.push_back(std::move(call));
  }
  return Status::Ok();
}

Status Message(const json& m, size_t i, std::set<std::string>* call_ids, ImageBudget* images,
               ChatMessageIn* msg, std::string* param) {
  const std::string field = "messages[" + std::to_string(i) + "]";
  if (!m.is_object()) return Bad(param, field, "must be an object");
  auto role = m.find("role");
  if (role == m.end() || !role->is_string()) return Bad(param, field + ".role", "must be a string");
  msg->role = role->get<std::string>();
  if (msg->role == "developer") msg->role = "system";
  if (msg->role != "system" && msg->role != "user" && msg->role != "assistant" &&
      msg->role != "tool") {
    return Bad(param, field + ".role",
               "must be one of system, user, assistant, tool; got '" + msg->role + "'");
  }
  SPARROW_RETURN_IF_ERROR(Text(m, "name", field + ".name", &msg->name, param));
  const json* calls = Member(m, "tool_calls");
  if (calls != nullptr) {
    if (msg->role != "assistant") {
      return Bad(param, field + ".tool_calls", "is only allowed on assistant messages");
    }
    SPARROW_RETURN_IF_ERROR(ToolCalls(*calls, field + ".tool_calls", msg, param));
    for (const auto& c : msg->tool_calls) call_ids->insert(c.id);
  }
  auto content = m.find("content");
  // An assistant message that only calls tools has no content (null or absent).
  if (content == m.end() && msg->tool_calls.empty()) {
    return Bad(param, field + ".content", "is required");
  }
  if (content != m.end()) {
    SPARROW_RETURN_IF_ERROR(MessageContent(*content, field + ".content", images, msg, param));
  }
  const json* reasoning = Member(m, "reasoning_content");
  if (reasoning != nullptr) {
    if (msg->role != "assistant" || !reasoning->is_string()) {
      return Bad(param, field + ".reasoning_content", "must be a string on an assistant message");
    }
    msg->reasoning_content = reasoning->get<std::string>();
  }
  if (msg->role == "tool") {
    SPARROW_RETURN_IF_ERROR(
        Text(m, "tool_call_id", field + ".tool_call_id", &msg->tool_call_id, param));
    if (msg->tool_call_id.empty()) {
      return Bad(param, field + ".tool_call_id", "is required for a tool message");
    }
    if (call_ids->count(msg->tool_call_id) == 0) {
      return Bad(
          param, field + ".tool_call_id",
          "is '" + msg->tool_call_id + "', which no earlier assistant message's tool_calls has");
    }
  }
  return Status::Ok();
}

Status Tool(const json& t, const std::string& field, ToolIn* out, std::string* param) {
  if (!t.is_object()) return Bad(param, field, "must be an object");
  const json* type = Member(t, "type");
  if (type == nullptr || *type != "function")
    return Bad(param, field + ".type", "must be \"function\"");
  const json* fn = Member(t, "function");
  if (fn == nullptr || !fn->is_object())
    return Bad(param, field + ".function", "must be an object");
  SPARROW_RETURN_IF_ERROR(Text(*fn, "name", field + ".function.name", &out->name, param));
  if (!IsValidToolName(out->name)) {
    return Bad(param, field + ".function.name",
               "must be 1 to 64 characters of a-z, A-Z, 0-9, '_' and '-'");
  }
  const json* desc = Member(*fn, "description");
  if (desc != nullptr) {
    if (!desc->is_string()) return Bad(param, field + ".function.description", "must be a string");
    out->description = desc->get<std::string>();
  }
  const json* params = Member(*fn, "parameters");
  if (params != nullptr) {
    if (!params->is_object()) {
      return Bad(param, field + ".function.parameters", "must be a JSON schema object");
    }
    out->parameters = *params;
  }
  const json* strict = Member(*fn, "strict");
  if (strict != nullptr && !strict->is_boolean()) {
    return Bad(param, field + ".function.strict", "must be true or false");
  }
  out->strict = strict != nullptr && strict->get<bool>();
  return Status::Ok();
}

Status ToolChoice(const json& c, ChatCompletionRequest* r, std::string* param) {
  if (c.is_string()) {
    r->tool_choice = c.get<std::string>();
    if (r->tool_choice == "none" || r->tool_choice == "auto" || r->tool_choice == "required") {
      return Status::Ok();
    }
  } else if (c.is_object()) {
    const json* type = Member(c, "type");
    const json* fn = Member(c, "function");
    const json* name = fn != nullptr && fn->is_object() ? Member(*fn, "name") : nullptr;
    if (type != nullptr && *type == "function" && name != nullptr && name->is_string()) {
      r->tool_choice = "function";
      r->tool_choice_name = name->get<std::string>();
      return Status::Ok();
    }
  }
  return Bad(param, "tool_choice",
             "must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
             "\"function\": {\"name\": \"...\"}}");
}

}  // namespace

bool IsValidToolName(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (char c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

Status ParseChatMessages(const json& b, std::vector<ChatMessageIn>* out, std::string* param) {
  auto msgs = b.find("messages");
  if (msgs == b.end()) return Bad(param, "messages", "is required");
  if (!msgs->is_array() || msgs->empty()) {
    return Bad(param, "messages", "must be a non-empty list of messages");
  }
  std::set<std::string> call_ids;
  ImageBudget images;
  for (size_t i = 0; i < msgs->size(); ++i) {
    ChatMessageIn msg;
    SPARROW_RETURN_IF_ERROR(Message((*msgs)[i], i, &call_ids, &images, &msg, param));
    out->push_back(std::move(msg));
  }
  return Status::Ok();
}

Status ParseToolList(const json& tools, const std::string& field, std::vector<ToolIn>* out,
                     std::string* param) {
  if (!tools.is_array() || tools.size() > kMaxTools) {
    return Bad(param, field, "must be a list of at most " + std::to_string(kMaxTools) + " tools");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string at = field + "[" + std::to_string(i) + "]";
    ToolIn t;
    SPARROW_RETURN_IF_ERROR(Tool(tools[i], at, &t, param));
    if (!names.insert(t.name).second) {
      return Bad(param, at + ".function.name", "repeats the tool name '" + t.name + "'");
    }
    out->push_back(std::move(t));
  }
  return Status::Ok();
}

Status ParseChatTools(const json& b, ChatCompletionRequest* r, std::string* param) {
  const json* tools = Member(b, "tools");
  if (tools != nullptr) SPARROW_RETURN_IF_ERROR(ParseToolList(*tools, "tools", &r->tools, param));
  const json* choice = Member(b, "tool_choice");
  if (choice != nullptr) SPARROW_RETURN_IF_ERROR(ToolChoice(*choice, r, param));
  SPARROW_RETURN_IF_ERROR(Bool(b, "parallel_tool_calls", &r->parallel_tool_calls, param));
  SPARROW_RETURN_IF_ERROR(String(b, "reasoning_format", &r->reasoning_format, param));
  if (!r->reasoning_format.empty() && r->reasoning_format != "none" &&
      r->reasoning_format != "deepseek" && r->reasoning_format != "auto") {
    return Bad(param, "reasoning_format", "must be \"none\", \"deepseek\" or \"auto\"");
  }
  const json* kwargs = Member(b, "chat_template_kwargs");
  if (kwargs != nullptr) {
    if (!kwargs->is_object()) return Bad(param, "chat_template_kwargs", "must be an object");
    const json* thinking = Member(*kwargs, "enable_thinking");
    if (thinking != nullptr) {
      if (!thinking->is_boolean()) {
        return Bad(param, "chat_template_kwargs.enable_thinking", "must be true or false");
      }
      r->enable_thinking = thinking->get<bool>();
    }
  }
  return Status::Ok();
}

namespace {

// OpenAI's prediction object: {"type": "content", "content": a string or text parts}.
Status ParsePrediction(const json& p, GenerationFields* g, std::string* param) {
  if (!p.is_object()) return Bad(param, "prediction", "must be an object");
  const json* type = Member(p, "type");
  if (type == nullptr || !type->is_string() || type->get<std::string>() != "content") {
    return Bad(param, "prediction.type", "must be \"content\"");
  }
  const json* content = Member(p, "content");
  if (content == nullptr) return Bad(param, "prediction.content", "is required");
  if (content->is_string()) {
    g->prediction = content->get<std::string>();
    return Status::Ok();
  }
  if (!content->is_array()) {
    return Bad(param, "prediction.content", "must be a string or an array of text parts");
  }
  std::string text;
  for (size_t i = 0; i < content->size(); ++i) {
    const json& part = (*content)[i];
    const std::string at = "prediction.content[" + std::to_string(i) + "]";
    const json* ptype = part.is_object() ? Member(part, "type") : nullptr;
    const json* ptext = part.is_object() ? Member(part, "text") : nullptr;
    if (ptype == nullptr || !ptype->is_string() || ptype->get<std::string>() != "text" ||
        ptext == nullptr || !ptext->is_string()) {
      return Bad(param, at, "must be {\"type\": \"text\", \"text\": a string}");
    }
    text += ptext->get<std::string>();
  }
  g->prediction = std::move(text);
  return Status::Ok();
}

}  // namespace

Status ParseOutputControls(const json& b, GenerationFields* g, std::string* param) {
  const json* bias = Member(b, "logit_bias");
  if (bias != nullptr) {
    if (!bias->is_object() || bias->size() > kMaxLogitBias) {
      return Bad(param, "logit_bias",
                 "must be an object of at most " + std::to_string(kMaxLogitBias) +
                     " \"token id\": bias entries");
    }
    for (const auto& [key, value] : bias->items()) {
      int32_t id = -1;
      const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
      if (ec != std::errc() || end != key.data() + key.size() || id < 0) {
        return Bad(param, "logit_bias", "keys must be token ids; got '" + key + "'");
      }
      if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < -100 ||
          value.get<double>() > 100) {
        return Bad(param, "logit_bias", "values must be numbers between -100 and 100");
      }
      g->logit_bias.emplace_back(id, static_cast<float>(value.get<double>()));
    }
  }
  const json* prediction = Member(b, "prediction");
  if (prediction != nullptr && !prediction->is_null()) {
    SPARROW_RETURN_IF_ERROR(ParsePrediction(*prediction, g, param));
  }
  const json* forced = Member(b, "forced_output");
  if (forced != nullptr) {
    if (!forced->is_string()) return Bad(param, "forced_output", "must be a string");
    g->forced_output = forced->get<std::string>();
  }
  return Status::Ok();
}

}  // namespace sparrow::openai
