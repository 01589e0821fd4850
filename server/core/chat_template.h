#pragma once
// Chat templates: turn a list of chat messages into the prompt text a model was trained on.
// The family is picked by name (a config override) or detected from the GGUF
// `tokenizer.chat_template` Jinja text by looking for marker substrings, the way llama.cpp
// does; ChatML is the fallback. Pure functions, thread-safe.
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/result.h"
#include "engine/tokenizer/special_partition.h"

namespace sparrow::server {

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

enum class ChatTemplate { kChatMl, kLlama2, kLlama3, kPhi3, kGemma, kMistral, kZephyr };

// "chatml", "llama2", "llama3", "phi3", "gemma", "mistral", "zephyr".
const char* ChatTemplateName(ChatTemplate t);
// A name as above (also "qwen" for ChatML), or nothing.
bool ChatTemplateFromName(std::string_view name, ChatTemplate* out);
// Detects the family of a Jinja template; ChatML for "" or anything unknown.
ChatTemplate DetectChatTemplate(std::string_view jinja);

// `template_name_or_jinja` is a family name or the model's Jinja template text. InvalidArgument
// for an unknown role or an empty message list.
Result<std::string> ApplyChatTemplate(const std::vector<ChatMessage>& messages,
                                      std::string_view template_name_or_jinja,
                                      bool add_generation_prompt);
Result<std::string> ApplyChatTemplate(const std::vector<ChatMessage>& messages, ChatTemplate t,
                                      bool add_generation_prompt);

// A rendered prompt and where the messages' contents sit in it. Tokenize it with
// Tokenizer::TokenizeTemplated(text, true, content): the template's markers become control
// tokens, while "</s>" or "<|im_end|>" typed by a client stays text and cannot forge a turn.
struct RenderedChat {
  std::string text;
  std::vector<tokenizer::TextRange> content;  // sorted, disjoint
};
Result<RenderedChat> RenderChatTemplate(const std::vector<ChatMessage>& messages,
                                        std::string_view template_name_or_jinja,
                                        bool add_generation_prompt);

}  // namespace sparrow::server
