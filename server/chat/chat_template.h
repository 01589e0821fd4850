#pragma once
// Chat templates: turn a list of chat messages (with tool calls, tool results and reasoning)
// and the tools a client offers into the prompt text a model was trained on. The family is
// picked by name (a config override) or detected from the GGUF `tokenizer.chat_template` Jinja
// text by looking for marker substrings, the way llama.cpp does; ChatML is the fallback. Each
// family writes tools the way its official template does (chat_families.cc). Pure functions,
// thread-safe.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/result.h"
#include "engine/tokenizer/special_partition.h"

namespace sparrow::server {

// A call an assistant message made. `arguments` is a JSON object's text, as OpenAI sends it.
struct ChatToolCall {
  std::string id;
  std::string name;
  std::string arguments;
};

struct ChatMessage {
  ChatMessage() = default;
  ChatMessage(std::string r, std::string c) : role(std::move(r)), content(std::move(c)) {}

  std::string role;  // "system", "user", "assistant" or "tool"
  std::string content;
  std::vector<ChatToolCall> tool_calls;  // assistant
  std::string tool_call_id;              // tool: the call this message answers
  std::string name;                      // optional speaker or tool name
  std::string reasoning_content;         // assistant: its thinking, kept apart from content
};

// A function the model may call (OpenAI's tools[i].function).
struct ChatTool {
  ChatTool() = default;
  ChatTool(std::string n, std::string d, nlohmann::json p = nlohmann::json::object())
      : name(std::move(n)), description(std::move(d)), parameters(std::move(p)) {}

  std::string name;
  std::string description;
  nlohmann::json parameters = nlohmann::json::object();  // a JSON schema
  // The arguments must keep to `parameters` (OpenAI's strict): a schema the grammar engine
  // cannot follow is refused instead of loosened to any object.
  bool strict = false;
};

struct ChatOptions {
  std::vector<ChatTool> tools;  // empty: the prompt mentions no tools
  bool add_generation_prompt = true;
  std::optional<bool> enable_thinking;  // chat_template_kwargs.enable_thinking
};

enum class ChatTemplate { kChatMl, kLlama2, kLlama3, kPhi3, kGemma, kMistral, kZephyr };

// "chatml", "llama2", "llama3", "phi3", "gemma", "mistral", "zephyr".
const char* ChatTemplateName(ChatTemplate t);
// A name as above (also "qwen" for ChatML), or nothing.
bool ChatTemplateFromName(std::string_view name, ChatTemplate* out);
// Detects the family of a Jinja template; ChatML for "" or anything unknown.
ChatTemplate DetectChatTemplate(std::string_view jinja);
// The family a template setting (a family name or Jinja text) stands for.
ChatTemplate ResolveChatTemplate(std::string_view template_name_or_jinja);

// Checks what every template needs: a non-empty list, known roles, a tool_call_id on tool
// messages. InvalidArgument naming the field ("messages[2].role").
Status ValidateChatMessages(const std::vector<ChatMessage>& messages);

// A rendered prompt and where the text clients wrote sits in it (message contents, reasoning,
// tool call arguments, tool definitions). Tokenize it with Tokenizer::TokenizeTemplated(text,
// true, content): the template's markers become control tokens, while "</s>" or "<|im_end|>"
// typed by a client stays text and cannot forge a turn.
struct RenderedChat {
  std::string text;
  std::vector<tokenizer::TextRange> content;  // sorted, disjoint
  // The generation prompt leaves the model inside a <think> block (its output starts with
  // reasoning, not with "<think>").
  bool opens_thinking = false;
};

// True when a prompt ends inside an opened <think> (DeepSeek R1, QwQ, Qwen 3 thinking variants
// open it themselves in the generation prompt).
bool EndsInThinking(std::string_view prompt);

// The built-in families (chat_families.h); `template_name_or_jinja` is a family name or Jinja
// text the family is detected from (ChatRenderer runs the Jinja itself). InvalidArgument
// for an unknown role or an empty message list.
Result<RenderedChat> RenderChatTemplate(const std::vector<ChatMessage>& messages,
                                        std::string_view template_name_or_jinja,
                                        const ChatOptions& options);
Result<RenderedChat> RenderChatTemplate(const std::vector<ChatMessage>& messages, ChatTemplate t,
                                        const ChatOptions& options);

// The text alone (tests, tools).
Result<std::string> ApplyChatTemplate(const std::vector<ChatMessage>& messages,
                                      std::string_view template_name_or_jinja,
                                      bool add_generation_prompt);
Result<std::string> ApplyChatTemplate(const std::vector<ChatMessage>& messages, ChatTemplate t,
                                      bool add_generation_prompt);

}  // namespace sparrow::server
