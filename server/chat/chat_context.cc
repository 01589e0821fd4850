#include "server/chat/chat_context.h"

#include <unordered_map>

#include "server/chat/chat_families.h"

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
// empty: templates test text for emptiness. The same text gets the same placeholder, so that a
// template comparing a call's id with a tool message's tool_call_id still finds them equal.
class Marker {
 public:
  std::string Mark(const std::string& s) { return Placeholder(s, 0); }
  // Names and ids keep their length ("\x01N\x03...\x02"): templates check it (Mistral's
  // "Tool call IDs should be alphanumeric strings with length 9").
  std::string MarkKeepingLength(const std::string& s) { return Placeholder(s, s.size()); }
  // Every string value and key below `j`; depth is bounded where the JSON entered
  // (api/openai/json_limits.h).
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
  std::string Placeholder(const std::string& s, size_t length) {
    if (s.empty()) return s;
    auto [it, added] = index_.try_emplace(s, texts_.size());
    if (added) texts_.push_back(s);
    std::string out = std::string("\x01").append(std::to_string(it->second));
    if (out.size() + 1 < length) out.append(length - out.size() - 1, '\x03');
    return out.append("\x02");
  }
  std::vector<std::string> texts_;
  std::unordered_map<std::string, size_t> index_;
};

// Where a placeholder's padding ends: `pos` past every "\x03" (raw) or "\u0003" (escaped).
size_t PaddingEnd(const std::string& skeleton, size_t pos, bool escaped) {
  static constexpr std::string_view kEscPad = "\\u0003";
  if (pos == std::string::npos) return pos;
  if (!escaped) return std::min(skeleton.find_first_not_of('\x03', pos), skeleton.size());
  while (skeleton.compare(pos, kEscPad.size(), kEscPad) == 0) pos += kEscPad.size();
  return pos;
}

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
  // Every string a client wrote: a control token's text in any of them must stay text.
  auto mark_short = [&marker](json& obj, const char* key) {
    if (obj.contains(key)) obj[key] = marker.MarkKeepingLength(obj[key].get<std::string>());
  };
  for (auto& m : ctx["messages"]) {
    m["content"] = marker.Mark(m["content"].get<std::string>());
    if (m.contains("reasoning_content")) {
      m["reasoning_content"] = marker.Mark(m["reasoning_content"].get<std::string>());
    }
    mark_short(m, "name");
    mark_short(m, "tool_call_id");
    if (!m.contains("tool_calls")) continue;
    for (auto& c : m["tool_calls"]) {
      mark_short(c, "id");
      mark_short(c["function"], "name");
      c["function"]["arguments"] = marker.MarkAll(c["function"]["arguments"]);
    }
  }
  if (ctx.contains("tools")) {
    for (auto& t : ctx["tools"]) {
      json& f = t["function"];
      mark_short(f, "name");
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
    const size_t digits_end = skeleton.find_first_not_of("0123456789", digits);
    const size_t close = PaddingEnd(skeleton, digits_end, escaped);
    const std::string_view close_mark = escaped ? kEscClose : std::string_view("\x02");
    size_t index = 0;
    const bool ok =
        digits_end != std::string::npos && digits_end > digits && digits_end - digits < 10 &&
        skeleton.compare(close, close_mark.size(), close_mark) == 0 &&
        (index = std::stoul(skeleton.substr(digits, digits_end - digits))) < marker.texts().size();
    if (!ok) {
      return InvalidArgument(
          "the chat template changes message text (a placeholder came out cut); its output "
          "cannot be kept apart from the template's own markers");
    }
    const std::string& text = marker.texts()[index];
    const std::string put = escaped ? JsonEscaped(text) : text;
    out.content.push_back({out.text.size(), put.size()});
    out.text += put;
    pos = close + close_mark.size();
  }
  if (out.text.find('\x02') != std::string::npos) {
    return InvalidArgument("the chat template changes message text (a placeholder came out cut)");
  }
  return out;
}

}  // namespace sparrow::server
