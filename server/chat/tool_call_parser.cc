#include "server/chat/tool_call_parser.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "api/openai/json_limits.h"
#include "server/chat/random_id.h"

namespace sparrow::server {
namespace {

using ojson = nlohmann::ordered_json;
constexpr size_t kNpos = std::string_view::npos;
constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kMistralArgs = "[ARGS]";

bool IsSpace(char c) {
  return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

size_t SkipSpace(std::string_view s, size_t i = 0) {
  while (i < s.size() && IsSpace(s[i])) ++i;
  return i;
}

std::string_view Trim(std::string_view s) {
  s.remove_prefix(SkipSpace(s));
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// Length of the JSON object or array that starts `s`: kNpos while it is incomplete, 0 when `s`
// does not start with one.
size_t JsonValueEnd(std::string_view s) {
  if (s.empty()) return kNpos;
  if (s[0] != '{' && s[0] != '[') return 0;
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return i + 1;
    }
  }
  return kNpos;
}

// How much of `s` could still be the start of `{"name"` (Llama 3's bare call): kNpos when it
// cannot, s.size() while it is a prefix, the match's length once whole.
size_t BareCallPrefix(std::string_view s) {
  if (s.empty() || s[0] != '{') return kNpos;
  const size_t i = SkipSpace(s, 1);
  constexpr std::string_view kName = "\"name\"";
  const std::string_view rest = s.substr(i);
  const size_t n = std::min(rest.size(), kName.size());
  if (rest.substr(0, n) != kName.substr(0, n)) return kNpos;
  return n == kName.size() ? i + n : s.size();
}

bool MakeCall(const ojson& j, std::string name, const std::vector<std::string>& tools,
              ChatToolCall* out) {
  ojson args;
  if (name.empty()) {
    if (!j.is_object()) return false;
    auto n = j.find("name");
    if (n == j.end() || !n->is_string()) return false;
    name = n->get<std::string>();
    auto a = j.find("arguments");
    if (a == j.end()) a = j.find("parameters");
    args = a == j.end() ? ojson::object() : *a;
    auto id = j.find("id");
    if (id != j.end() && id->is_string()) out->id = id->get<std::string>();
  } else {
    args = j;
  }
  // Some models write the arguments as a JSON string holding the object.
  if (args.is_string()) {
    Result<ojson> parsed = openai::ParseBoundedJson<ojson>(args.get<std::string>(), "arguments");
    if (!parsed.ok()) return false;
    args = std::move(parsed).value();
  }
  if (!args.is_object() || name.empty()) return false;
  if (!tools.empty() && std::find(tools.begin(), tools.end(), name) == tools.end()) return false;
  out->name = std::move(name);
  out->arguments = args.dump(-1, ' ', false, ojson::error_handler_t::replace);
  return true;
}

}  // namespace

ToolCallFormat ToolCallFormatFor(std::string_view t) {
  // The Jinja text's own markers first: a ChatML template may still speak Hermes, and so on.
  if (t.find("[TOOL_CALLS]") != kNpos) return ToolCallFormat::kMistral;
  if (t.find("<tool_call>") != kNpos) return ToolCallFormat::kHermes;
  if (t.find("<|python_tag|>") != kNpos) return ToolCallFormat::kLlama3;
  switch (ResolveChatTemplate(t)) {
    case ChatTemplate::kLlama3:
      return ToolCallFormat::kLlama3;
    case ChatTemplate::kMistral:
      return ToolCallFormat::kMistral;
    default:
      return ToolCallFormat::kHermes;
  }
}

const char* ToolCallFormatName(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::kNone:
      return "none";
    case ToolCallFormat::kHermes:
      return "hermes";
    case ToolCallFormat::kLlama3:
      return "llama3";
    case ToolCallFormat::kMistral:
      return "mistral";
  }
  return "none";
}

std::vector<std::string> ToolCallMarkers(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::kNone:
      return {};
    case ToolCallFormat::kHermes:
      return {std::string(kHermesOpen), std::string(kHermesClose)};
    case ToolCallFormat::kLlama3:
      return {"<|python_tag|>"};
    case ToolCallFormat::kMistral:
      return {"[TOOL_CALLS]", std::string(kMistralArgs)};
  }
  return {};
}

std::string ToolCallOpening(ToolCallFormat f, const std::string& name) {
  const std::string named = "{\"name\": \"" + name + "\", ";
  switch (f) {
    case ToolCallFormat::kNone:
      return "";
    case ToolCallFormat::kHermes:
      return "<tool_call>\n" + (name.empty() ? "" : named + "\"arguments\": ");
    case ToolCallFormat::kLlama3:
      return name.empty() ? "{\"name\": \"" : named + "\"parameters\": ";
    case ToolCallFormat::kMistral:
      return "[TOOL_CALLS]" + (name.empty() ? "" : "[" + named + "\"arguments\": ");
  }
  return "";
}

ToolCallParser::ToolCallParser(ToolCallFormat format, std::vector<std::string> tools, bool parallel)
    : format_(format), tools_(std::move(tools)), parallel_(parallel) {
  if (format_ == ToolCallFormat::kHermes) markers_ = {std::string(kHermesOpen)};
  if (format_ == ToolCallFormat::kLlama3) markers_ = {"<|python_tag|>"};
  if (format_ == ToolCallFormat::kMistral) markers_ = {"[TOOL_CALLS]"};
}

ToolCallEvents ToolCallParser::Push(std::string_view text) {
  ToolCallEvents ev;
  if (format_ == ToolCallFormat::kNone) {
    ev.content = std::string(text);
    return ev;
  }
  buf_.append(text);
  while (in_call_ ? StepCall(&ev, false) : StepText(&ev)) {
  }
  return ev;
}

ToolCallEvents ToolCallParser::Finish() {
  ToolCallEvents ev;
  while (in_call_ ? StepCall(&ev, true) : StepText(&ev)) {
  }
  if (!(after_call_ && Trim(buf_).empty())) ev.content += buf_;
  buf_.clear();
  return ev;
}

bool ToolCallParser::StepText(ToolCallEvents* ev) {
  if (after_call_) {
    // Whitespace (and Llama 3's ';') between calls is no content.
    size_t i = 0;
    while (i < buf_.size() && (IsSpace(buf_[i]) || buf_[i] == ';')) ++i;
    buf_.erase(0, i);
    if (buf_.empty()) return false;
    after_call_ = false;
  }
  // Whitespace before a first call is no content (SentencePiece answers start with a space):
  // hold it until something else comes.
  const size_t lead = at_start_ ? SkipSpace(buf_) : 0;
  if (at_start_ && lead == buf_.size()) return false;
  if (format_ == ToolCallFormat::kLlama3 && at_start_) {
    const size_t m = BareCallPrefix(std::string_view(buf_).substr(lead));
    if (m == buf_.size() - lead) return false;  // may still become {"name"
    if (m != kNpos) {
      dropped_ = buf_.substr(0, lead);
      buf_.erase(0, lead);
      at_start_ = false;
      in_call_ = true;
      marker_.clear();
      return true;
    }
  }
  size_t first = kNpos;
  const std::string* which = nullptr;
  for (const auto& m : markers_) {
    const size_t p = buf_.find(m);
    if (p < first) {
      first = p;
      which = &m;
    }
  }
  if (which != nullptr) {
    if (at_start_ && first == lead) {
      dropped_ = buf_.substr(0, first);  // given back if the call turns out malformed
    } else {
      ev->content += buf_.substr(0, first);
    }
    buf_.erase(0, first + which->size());
    in_call_ = true;
    marker_ = *which;
    at_start_ = false;
    return true;
  }
  // Hold back the longest tail that may still grow into a marker.
  size_t keep = 0;
  for (const auto& m : markers_) {
    for (size_t len = std::min(m.size() - 1, buf_.size()); len > keep; --len) {
      if (std::string_view(buf_).substr(buf_.size() - len) == std::string_view(m).substr(0, len)) {
        keep = len;
        break;
      }
    }
  }
  if (at_start_ && lead + keep == buf_.size()) return false;  // maybe whitespace, then a marker
  ev->content += buf_.substr(0, buf_.size() - keep);
  buf_.erase(0, buf_.size() - keep);
  at_start_ = false;
  return false;
}

void ToolCallParser::Malformed(std::string_view body, ToolCallEvents* ev) {
  ev->content += dropped_;
  dropped_.clear();
  ev->content += marker_;
  ev->content += body;
  in_call_ = false;
}

void ToolCallParser::Emit(ChatToolCall call, ToolCallEvents* ev) {
  if (!parallel_ && calls_ > 0) return;
  if (call.id.empty()) call.id = "call_" + RandomAlnum(24);
  ev->calls.push_back(std::move(call));
  ++calls_;
}

bool ToolCallParser::AddCall(std::string_view json_text, std::string name, ToolCallEvents* ev) {
  // The model's text, bounded like a client's: a call nested past the limit is text.
  Result<ojson> parsed = openai::ParseBoundedJson<ojson>(json_text, "tool call");
  if (!parsed.ok()) return false;
  const ojson& j = *parsed;
  std::vector<ChatToolCall> calls;
  if (j.is_array() && name.empty()) {
    for (const auto& item : j) {
      if (!MakeCall(item, "", tools_, &calls.emplace_back())) return false;
    }
    if (calls.empty()) return false;
  } else if (!MakeCall(j, std::move(name), tools_, &calls.emplace_back())) {
    return false;
  }
  for (auto& c : calls) Emit(std::move(c), ev);
  dropped_.clear();
  in_call_ = false;
  after_call_ = true;
  at_start_ = format_ == ToolCallFormat::kLlama3;
  return true;
}

bool ToolCallParser::StepCall(ToolCallEvents* ev, bool at_end) {
  if (format_ == ToolCallFormat::kHermes) {
    const size_t close = buf_.find(kHermesClose);
    if (close == kNpos && !at_end) return false;
    const size_t body_len = close == kNpos ? buf_.size() : close;
    const size_t used = close == kNpos ? buf_.size() : close + kHermesClose.size();
    const std::string_view body = Trim(std::string_view(buf_).substr(0, body_len));
    if (JsonValueEnd(body) != body.size() || !AddCall(body, "", ev)) {
      Malformed(std::string_view(buf_).substr(0, used), ev);
    }
    buf_.erase(0, used);
    return true;
  }
  const size_t i = SkipSpace(buf_);
  const std::string_view s = std::string_view(buf_).substr(i);
  if (s.empty()) {
    if (!at_end) return false;
    Malformed(buf_, ev);
    buf_.clear();
    return true;
  }
  std::string name;
  size_t json_at = i;
  if (format_ == ToolCallFormat::kMistral && s[0] != '{' && s[0] != '[') {
    // The newer form: [TOOL_CALLS]name[ARGS]{...}
    const size_t args = s.find(kMistralArgs);
    const size_t bracket = s.find('[');
    const auto bad_char = [](char c) {
      return !(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.');
    };
    const std::string_view head = s.substr(0, std::min(args, bracket));
    // Before [ARGS] has arrived whole, what follows the name must still be able to become it.
    const bool cut_args = args == kNpos && bracket != kNpos &&
                          !kMistralArgs.starts_with(s.substr(bracket, kMistralArgs.size() + 1));
    if (std::any_of(head.begin(), head.end(), bad_char) || cut_args || (args == kNpos && at_end)) {
      Malformed("", ev);  // not a call after all: the text goes on as content
      return true;
    }
    if (args == kNpos) return false;
    name = std::string(head);
    json_at = SkipSpace(buf_, i + args + kMistralArgs.size());
  }
  const size_t end = JsonValueEnd(std::string_view(buf_).substr(json_at));
  if (end == kNpos && !at_end) return false;
  if (end == 0 || end == kNpos ||
      !AddCall(std::string_view(buf_).substr(json_at, end), std::move(name), ev)) {
    const size_t used = (end == 0 || end == kNpos) ? json_at : json_at + end;
    Malformed(std::string_view(buf_).substr(0, used), ev);
    buf_.erase(0, used);
    return true;
  }
  buf_.erase(0, json_at + end);
  return true;
}

ToolCallEvents ParseToolCalls(ToolCallFormat format, std::string_view text,
                              const std::vector<std::string>& tools, bool parallel) {
  ToolCallParser p(format, tools, parallel);
  ToolCallEvents ev = p.Push(text);
  ToolCallEvents tail = p.Finish();
  ev.content += tail.content;
  for (auto& c : tail.calls) ev.calls.push_back(std::move(c));
  return ev;
}

}  // namespace sparrow::server
