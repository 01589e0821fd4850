#pragma once
// The seven built-in template families, written in C++ for files without a Jinja template (or
// one the interpreter cannot run). Each writes tools as its official template does: Llama 3.x
// puts the JSON tool list in the first user turn and answers come back in the `ipython` role;
// Mistral has [AVAILABLE_TOOLS], [TOOL_CALLS] and [TOOL_RESULTS]; ChatML (Qwen, Hermes) and
// the families without a tool format of their own get Hermes-style <tools> in the system prompt,
// <tool_call> and <tool_response>. Pure functions, thread-safe.
#include <string_view>
#include <vector>

#include "server/chat/chat_template.h"

namespace sparrow::server {

// Collects the prompt, keeping apart the template's markers (may become control tokens) and
// text that came from a client (never does).
class ChatWriter {
 public:
  void Markup(std::string_view s) { out_.text += s; }
  void Text(std::string_view s);
  RenderedChat Take() { return std::move(out_); }

 private:
  RenderedChat out_;
};

// Messages and options must have passed ValidateChatMessages.
RenderedChat RenderChatFamily(ChatTemplate t, const std::vector<ChatMessage>& messages,
                              const ChatOptions& options);

// A tool as OpenAI and Hugging Face templates spell it, in that key order: {"type": "function",
// "function": {"name", "description", "parameters"}}.
nlohmann::ordered_json ToolJson(const ChatTool& tool);
// A call's arguments as a JSON value in the client's key order (templates expect an object);
// the text itself when it is not JSON.
nlohmann::ordered_json ArgumentsJson(const ChatToolCall& call);

}  // namespace sparrow::server
