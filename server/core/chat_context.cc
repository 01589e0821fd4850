#include "server/core/chat_context.h"

#include "server/core/chat_families.h"

namespace sparrow::server {
namespace {

using json = nlohmann::ordered_json;

json MessageJson(const ChatMessage& m) {
  json j = {{"role", m.role}, {"content", m.content}};
  if (!m.name.empty()) j["name"] = m.name;
  if (!m.tool_call_id.empty()) j["tool_call_id"] = m.tool_call_id;
  if (!m.reasoning_content.empty()) j["reasoning_content"] = m.reasoning_content;
  if (!m.tool_calls.empty()) {
    json calls = json::array();
    for (const ChatToolCall& c : m.tool_calls) {
      calls.push_back({{"id", c.id},
                       {"type", "function"},
                       {"function", {{"name", c.name}, {"arguments", ArgumentsJson(c)}}}});
    }
    j["tool_calls"] = std::move(calls);
  }
  return j;
}

// Swaps client strings for placeholders "\x01N\x02" and remembers them. Empty strings stay
// empty: templates test text for emptiness.
class Marker {
 public:
  std::string Mark(const std::string& s) {
    if (s.empty()) return s;
    texts_.push_back(s);
    return std::string("\x01").append(std::to_string(texts_.size() - 1)).append("\x02");
  }
  // Every string value and key below `j`.
  json MarkAll(const json& j) {
    if (j.is_string()) return Mark(j.get<std::string>());
    if (j.is_array()) {
      json out = json::array();
      for (const auto& v : j) out.push_back(MarkAll(v));
      return out;
    }
    if (j.is_object()) {
      json out = json::object();
      for (const auto& [k, v] : j.items()) out[Mark(k)] = MarkAll(v);
      return out;
    }
    return j;
  }
  const std::vector<std::string>& texts() const { return texts_; }

 private:
  std::vector<std::string> texts_;
};

std::string JsonEscaped(const std::string& s) {
  const std::string quoted = json(s).dump(-1, ' ', false, json::error_handler_t::replace);
  return quoted.substr(1, quoted.size() - 2);
}

}  // namespace

json ChatTemplateContext(const std::vector<ChatMessage>& messages, const ChatOptions& o,
                         std::string_view bos, std::string_view eos) {
  json ctx = {{"messages", json::array()},
              {"add_generation_prompt", o.add_generation_prompt},
              {"bos_token", bos},
              {"eos_token", eos}};
  for (const ChatMessage& m : messages) ctx["messages"].push_back(MessageJson(m));
  if (!o.tools.empty()) {
    ctx["tools"] = json::array();
    for (const ChatTool& t : o.tools) ctx["tools"].push_back(ToolJson(t));
  }
  if (o.enable_thinking) ctx["enable_thinking"] = *o.enable_thinking;
  return ctx;
}

Result<RenderedChat> RenderWithClientText(const std::vector<ChatMessage>& messages,
                                          const ChatOptions& o, std::string_view bos,
                                          std::string_view eos, const JinjaRender& render) {
  json ctx = ChatTemplateContext(messages, o, bos, eos);
  Marker marker;
  for (auto& m : ctx["messages"]) {
    m["content"] = marker.Mark(m["content"].get<std::string>());
    if (m.contains("reasoning_content")) {
      m["reasoning_content"] = marker.Mark(m["reasoning_content"].get<std::string>());
    }
    if (!m.contains("tool_calls")) continue;
    for (auto& c : m["tool_calls"]) {
      c["function"]["arguments"] = marker.MarkAll(c["function"]["arguments"]);
    }
  }
  if (ctx.contains("tools")) {
    for (auto& t : ctx["tools"]) {
      json& f = t["function"];
      if (f.contains("description")) f["description"] = marker.Mark(f["description"]);
      f["parameters"] = marker.MarkAll(f["parameters"]);
    }
  }
  SPARROW_ASSIGN_OR_RETURN(std::string skeleton, render(ctx));
  // A placeholder appears raw, or JSON-escaped where the template used tojson.
  static constexpr std::string_view kEscOpen = "\\u0001", kEscClose = "\\u0002";
  RenderedChat out;
  size_t pos = 0;
  for (;;) {
    const size_t raw = skeleton.find('\x01', pos);
    const size_t esc = skeleton.find(kEscOpen, pos);
    const size_t open = std::min(raw, esc);
    out.text.append(skeleton, pos, open == std::string::npos ? std::string::npos : open - pos);
    if (open == std::string::npos) break;
    const bool escaped = esc < raw;
    const size_t digits = open + (escaped ? kEscOpen.size() : 1);
    const size_t close = escaped ? skeleton.find(kEscClose, digits) : skeleton.find('\x02', digits);
    size_t index = 0;
    const bool ok =
        close != std::string::npos && close > digits && close - digits < 10 &&
        skeleton.find_first_not_of("0123456789", digits) == close &&
        (index = std::stoul(skeleton.substr(digits, close - digits))) < marker.texts().size();
    if (!ok) {
      return InvalidArgument(
          "the chat template changes message text (a placeholder came out cut); its output "
          "cannot be kept apart from the template's own markers");
    }
    const std::string& text = marker.texts()[index];
    const std::string put = escaped ? JsonEscaped(text) : text;
    out.content.push_back({out.text.size(), put.size()});
    out.text += put;
    pos = close + (escaped ? kEscClose.size() : 1);
  }
  if (out.text.find('\x02') != std::string::npos) {
    return InvalidArgument("the chat template changes message text (a placeholder came out cut)");
  }
  return out;
}

}  // namespace sparrow::server
