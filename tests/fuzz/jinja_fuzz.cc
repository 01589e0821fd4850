// libFuzzer target for the chat-template interpreter: any byte string, as a template, must parse
// to a template or to an error naming its line, and a template must render to text or to an
// error (never a crash, a hang or unbounded memory) over a context like a chat request's.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "engine/jinja/jinja_template.h"

namespace {

const nlohmann::ordered_json& Context() {
  static const auto* context = new nlohmann::ordered_json(nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Weather in Oslo?"},
      {"role": "assistant", "content": "", "reasoning_content": "Use the tool.",
       "tool_calls": [{"id": "abc123XYZ", "type": "function",
                       "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
      {"role": "tool", "tool_call_id": "abc123XYZ", "content": "{\"t\": -2}"},
      {"role": "user", "content": [{"type": "text", "text": "Thanks"}]}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                              "required": ["city"]}}}],
    "add_generation_prompt": true, "enable_thinking": false, "bos_token": "<s>",
    "eos_token": "</s>", "sparrow_now": "2026-01-15"})"));
  return *context;
}

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "jinja_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

void CheckError(const char* stage, const sparrow::Status& st) {
  using sparrow::StatusCode;
  if (st.code() != StatusCode::kInvalidArgument && st.code() != StatusCode::kUnsupported &&
      st.code() != StatusCode::kResourceExhausted && st.code() != StatusCode::kOutOfRange) {
    Fail(stage, "unexpected status " + st.ToString());
  }
  if (st.message().rfind("chat template line ", 0) != 0) {
    Fail(stage, "error names no line: " + st.ToString());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  auto tmpl = sparrow::jinja::Template::Parse(source);
  if (!tmpl.ok()) {
    CheckError("parse", tmpl.status());
    return 0;
  }
  // Smaller than the defaults so that a runaway template stops in well under a second even with
  // the sanitizers; the same code counts and stops it.
  sparrow::jinja::RenderLimits limits;
  limits.max_bytes = size_t{16} << 20;
  limits.max_output_bytes = size_t{4} << 20;
  limits.max_steps = 2'000'000;
  auto text = tmpl->Render(Context(), limits);
  if (!text.ok()) CheckError("render", text.status());
  return 0;
}
