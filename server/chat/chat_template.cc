#include "server/chat/chat_template.h"

#include "server/chat/chat_families.h"

namespace sparrow::server {
namespace {

bool Has(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}

}  // namespace

bool EndsInThinking(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  return text.ends_with("<think>");
}

const char* ChatTemplateName(ChatTemplate t) {
  switch (t) {
    case ChatTemplate::kChatMl:
      return "chatml";
    case ChatTemplate::kLlama2:
      return "llama2";
    case ChatTemplate::kLlama3:
      return "llama3";
    case ChatTemplate::kPhi3:
      return "phi3";
    case ChatTemplate::kGemma:
      return "gemma";
    case ChatTemplate::kMistral:
      return "mistral";
    case ChatTemplate::kZephyr:
      return "zephyr";
  }
  return "chatml";
}

bool ChatTemplateFromName(std::string_view name, ChatTemplate* out) {
  static constexpr ChatTemplate kAll[] = {
      ChatTemplate::kChatMl, ChatTemplate::kLlama2,  ChatTemplate::kLlama3, ChatTemplate::kPhi3,
      ChatTemplate::kGemma,  ChatTemplate::kMistral, ChatTemplate::kZephyr};
  for (ChatTemplate t : kAll) {
    if (name == ChatTemplateName(t)) {
      *out = t;
      return true;
    }
  }
  if (name == "qwen" || name == "qwen2") {
    *out = ChatTemplate::kChatMl;
    return true;
  }
  return false;
}

ChatTemplate DetectChatTemplate(std::string_view t) {
  // Order matters: several families share markers (e.g. "<|assistant|>").
  if (Has(t, "<|im_start|>")) return ChatTemplate::kChatMl;
  if (Has(t, "<|start_header_id|>") && Has(t, "<|end_header_id|>")) return ChatTemplate::kLlama3;
  if (Has(t, "[INST]")) {
    // Llama 2 wraps the system prompt in <<SYS>>; Mistral's instruct templates do not.
    return Has(t, "<<SYS>>") ? ChatTemplate::kLlama2 : ChatTemplate::kMistral;
  }
  if (Has(t, "<|assistant|>") && Has(t, "<|end|>")) return ChatTemplate::kPhi3;
  if (Has(t, "<start_of_turn>")) return ChatTemplate::kGemma;
  if (Has(t, "<|user|>")) return ChatTemplate::kZephyr;
  return ChatTemplate::kChatMl;
}

ChatTemplate ResolveChatTemplate(std::string_view template_name_or_jinja) {
  ChatTemplate t;
  if (ChatTemplateFromName(template_name_or_jinja, &t)) return t;
  return DetectChatTemplate(template_name_or_jinja);
}

Status ValidateChatMessages(const std::vector<ChatMessage>& messages) {
  if (messages.empty()) return InvalidArgument("'messages' must not be empty");
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    const std::string field = "'messages[" + std::to_string(i) + "]";
    if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool") {
      return InvalidArgument(field + ".role' must be one of system, user, assistant, tool; got '" +
                             m.role + "'");
    }
    if (m.role == "tool" && m.tool_call_id.empty()) {
      return InvalidArgument(field + ".tool_call_id' is required for a tool message");
    }
    if (!m.tool_calls.empty() && m.role != "assistant") {
      return InvalidArgument(field + ".tool_calls' is only allowed on assistant messages");
    }
    for (size_t j = 0; j < m.tool_calls.size(); ++j) {
      if (m.tool_calls[j].name.empty()) {
        return InvalidArgument(field + ".tool_calls[" + std::to_string(j) +
                               "].function.name' must not be empty");
      }
    }
  }
  return Status::Ok();
}

Result<RenderedChat> RenderChatTemplate(const std::vector<ChatMessage>& messages, ChatTemplate t,
                                        const ChatOptions& options) {
  SPARROW_RETURN_IF_ERROR(ValidateChatMessages(messages));
  RenderedChat out = RenderChatFamily(t, messages, options);
  out.opens_thinking = options.add_generation_prompt && EndsInThinking(out.text);
  return out;
}

Result<RenderedChat> RenderChatTemplate(const std::vector<ChatMessage>& messages,
                                        std::string_view template_name_or_jinja,
                                        const ChatOptions& options) {
  return RenderChatTemplate(messages, ResolveChatTemplate(template_name_or_jinja), options);
}

Result<std::string> ApplyChatTemplate(const std::vector<ChatMessage>& messages, ChatTemplate t,
                                      bool add_generation_prompt) {
  ChatOptions o;
  o.add_generation_prompt = add_generation_prompt;
  SPARROW_ASSIGN_OR_RETURN(RenderedChat r, RenderChatTemplate(messages, t, o));
  return std::move(r.text);
}

Result<std::string> ApplyChatTemplate(const std::vector<ChatMessage>& messages,
                                      std::string_view template_name_or_jinja,
                                      bool add_generation_prompt) {
  return ApplyChatTemplate(messages, ResolveChatTemplate(template_name_or_jinja),
                           add_generation_prompt);
}

}  // namespace sparrow::server
