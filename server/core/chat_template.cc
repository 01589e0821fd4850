#include "server/core/chat_template.h"

namespace sparrow::server {
namespace {

bool Has(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}

// The system prompt, if the first message is one, and the index of the first other message.
size_t SplitSystem(const std::vector<ChatMessage>& m, std::string* system) {
  if (!m.empty() && m[0].role == "system") {
    *system = m[0].content;
    return 1;
  }
  return 0;
}

std::string ChatMl(const std::vector<ChatMessage>& m, bool gen) {
  std::string out;
  for (const auto& msg : m) out += "<|im_start|>" + msg.role + "\n" + msg.content + "<|im_end|>\n";
  if (gen) out += "<|im_start|>assistant\n";
  return out;
}

std::string Llama2(const std::vector<ChatMessage>& m) {
  std::string system;
  std::string out = "[INST] ";
  for (size_t i = SplitSystem(m, &system); i < m.size(); ++i) {
    if (m[i].role == "user") {
      if (!system.empty()) {
        out += "<<SYS>>\n" + system + "\n<</SYS>>\n\n";
        system.clear();
      }
      out += m[i].content + " [/INST]";
    } else if (m[i].role == "assistant") {
      out += " " + m[i].content + " </s><s>[INST] ";
    }
  }
  return out;
}

std::string Llama3(const std::vector<ChatMessage>& m, bool gen) {
  std::string out;
  for (const auto& msg : m) {
    out += "<|start_header_id|>" + msg.role + "<|end_header_id|>\n\n" + msg.content + "<|eot_id|>";
  }
  if (gen) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

std::string Phi3(const std::vector<ChatMessage>& m, bool gen) {
  std::string out;
  for (const auto& msg : m) out += "<|" + msg.role + "|>\n" + msg.content + "<|end|>\n";
  if (gen) out += "<|assistant|>\n";
  return out;
}

std::string Zephyr(const std::vector<ChatMessage>& m, bool gen) {
  std::string out;
  for (const auto& msg : m) out += "<|" + msg.role + "|>\n" + msg.content + "<|endoftext|>\n";
  if (gen) out += "<|assistant|>\n";
  return out;
}

// Gemma has no system role: the system prompt goes in front of the first user turn.
std::string Gemma(const std::vector<ChatMessage>& m, bool gen) {
  std::string system;
  std::string out;
  for (size_t i = SplitSystem(m, &system); i < m.size(); ++i) {
    const std::string role = m[i].role == "assistant" ? "model" : m[i].role;
    std::string content = m[i].content;
    if (!system.empty() && m[i].role == "user") {
      content = system + "\n\n" + content;
      system.clear();
    }
    out += "<start_of_turn>" + role + "\n" + content + "<end_of_turn>\n";
  }
  if (gen) out += "<start_of_turn>model\n";
  return out;
}

// Mistral instruct: the system prompt is folded into the first user turn.
std::string Mistral(const std::vector<ChatMessage>& m) {
  std::string system;
  std::string out;
  for (size_t i = SplitSystem(m, &system); i < m.size(); ++i) {
    if (m[i].role == "user") {
      out += "[INST] ";
      if (!system.empty()) {
        out += system + "\n\n";
        system.clear();
      }
      out += m[i].content + " [/INST]";
    } else if (m[i].role == "assistant") {
      out += " " + m[i].content + "</s>";
    }
  }
  return out;
}

}  // namespace

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

Result<std::string> ApplyChatTemplate(const std::vector<ChatMessage>& messages, ChatTemplate t,
                                      bool add_generation_prompt) {
  if (messages.empty()) return InvalidArgument("'messages' must not be empty");
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& r = messages[i].role;
    if (r != "system" && r != "user" && r != "assistant") {
      return InvalidArgument("'messages[" + std::to_string(i) + "].role' must be one of system, " +
                             "user, assistant; got '" + r + "'");
    }
  }
  const bool gen = add_generation_prompt;
  switch (t) {
    case ChatTemplate::kChatMl:
      return ChatMl(messages, gen);
    case ChatTemplate::kLlama2:
      return Llama2(messages);
    case ChatTemplate::kLlama3:
      return Llama3(messages, gen);
    case ChatTemplate::kPhi3:
      return Phi3(messages, gen);
    case ChatTemplate::kGemma:
      return Gemma(messages, gen);
    case ChatTemplate::kMistral:
      return Mistral(messages);
    case ChatTemplate::kZephyr:
      return Zephyr(messages, gen);
  }
  return ChatMl(messages, gen);
}

Result<std::string> ApplyChatTemplate(const std::vector<ChatMessage>& messages,
                                      std::string_view template_name_or_jinja,
                                      bool add_generation_prompt) {
  ChatTemplate t;
  if (!ChatTemplateFromName(template_name_or_jinja, &t)) {
    t = DetectChatTemplate(template_name_or_jinja);
  }
  return ApplyChatTemplate(messages, t, add_generation_prompt);
}

Result<RenderedChat> RenderChatTemplate(const std::vector<ChatMessage>& messages,
                                        std::string_view template_name_or_jinja,
                                        bool add_generation_prompt) {
  // Render with a placeholder per non-empty content (templates test contents for emptiness),
  // then put the contents in, noting where each lands. Placeholders use bytes no template
  // writes, and contents are never scanned, so a client cannot fake one.
  std::vector<ChatMessage> marked = messages;
  for (size_t i = 0; i < marked.size(); ++i) {
    if (marked[i].content.empty()) continue;
    std::string& mark = marked[i].content;
    mark.assign(1, '\x01');
    mark += std::to_string(i);
    mark += '\x02';
  }
  SPARROW_ASSIGN_OR_RETURN(std::string skeleton, ApplyChatTemplate(marked, template_name_or_jinja,
                                                                   add_generation_prompt));
  RenderedChat out;
  size_t pos = 0;
  for (;;) {
    const size_t open = skeleton.find('\x01', pos);
    out.text.append(skeleton, pos, open == std::string::npos ? std::string::npos : open - pos);
    if (open == std::string::npos) break;
    const size_t close = skeleton.find('\x02', open);
    const std::string& content =
        messages[std::stoul(skeleton.substr(open + 1, close - open - 1))].content;
    out.content.push_back({out.text.size(), content.size()});
    out.text += content;
    pos = close + 1;
  }
  return out;
}

}  // namespace sparrow::server
