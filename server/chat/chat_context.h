#pragma once
// The bridge to Jinja chat templates (a GGUF's own tokenizer.chat_template): the context they
// render with, as Hugging Face's apply_chat_template builds it, and a rendering that still knows
// where the text clients wrote lies in the output (RenderedChat::content), so that text never
// becomes control tokens. Pure functions, thread-safe.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "server/chat/chat_template.h"

namespace sparrow::server {

// Keys keep OpenAI's order ({"type": "function", "function": {"name", ...}}, arguments as the
// client wrote them), which a template's tojson shows as Python would.
// {"messages": [OpenAI-style objects; tool_calls[i].function.arguments parsed to objects, as
// HF templates expect], "tools": [...] (absent when none), "add_generation_prompt",
// "bos_token", "eos_token", "enable_thinking" (when set)}.
nlohmann::ordered_json ChatTemplateContext(const std::vector<ChatMessage>& messages,
                                           const ChatOptions& options, std::string_view bos_token,
                                           std::string_view eos_token);

// Renders with `render` (a Jinja template's Render) and finds the client text in its output:
// every string a client wrote (contents, reasoning, argument and schema values and keys, tool
// descriptions) is rendered as a placeholder, then put back, as written or as JSON-escaped text
// where the template wrote it with tojson. InvalidArgument when the template cut or changed a
// placeholder (it transforms message text, so where it lies cannot be known); the caller then
// falls back to the built-in family.
using JinjaRender = std::function<Result<std::string>(const nlohmann::ordered_json& context)>;
Result<RenderedChat> RenderWithClientText(const std::vector<ChatMessage>& messages,
                                          const ChatOptions& options, std::string_view bos_token,
                                          std::string_view eos_token, const JinjaRender& render);

}  // namespace sparrow::server
