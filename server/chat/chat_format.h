#pragma once
// ChatFormat: how one model's chats are written and read, decided once when the model loads:
// the template (the GGUF's Jinja compiled once, or a built-in family), the tool-call format it
// teaches, and the control tokens of the tool-call and thinking markers, which the answer
// parser must see as text. Requests use it as is; nothing rescans the template text per
// request. Immutable once made; thread-safe.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/tokenizer/tokenizer.h"
#include "server/chat/chat_renderer.h"
#include "server/chat/tool_call_parser.h"

namespace sparrow::server {

class ChatFormat {
 public:
  // `setting`: a family name (the config's chat_template) or Jinja text ("" means ChatML);
  // `vocab`: the model's tokenizer (its BOS and EOS texts for the template, whether it adds
  // BOS, the markers' ids); `origin`: where the setting came from, for the warnings that name
  // it (e.g. "tokenizer.chat_template of 'm.gguf'").
  ChatFormat(std::string setting, const Tokenizer& vocab, std::string origin);

  Result<RenderedChat> Render(const std::vector<ChatMessage>& messages,
                              const ChatOptions& options) const {
    return renderer_.Render(messages, options);
  }

  const std::string& setting() const { return renderer_.setting(); }
  bool has_jinja() const { return renderer_.has_jinja(); }
  ChatTemplate family() const { return renderer_.family(); }
  // The format the template teaches (ToolCallFormatFor), for requests that offer tools.
  ToolCallFormat tool_format() const { return tool_format_; }
  // The ids of the markers that are control tokens in this vocabulary and must reach the
  // answer parser as text: "<think>" and "</think>", and with `tools` the tool-call format's.
  const std::vector<int32_t>& visible_markers(bool tools) const {
    return tools ? tool_markers_ : thinking_markers_;
  }

 private:
  ChatRenderer renderer_;
  ToolCallFormat tool_format_;
  std::vector<int32_t> thinking_markers_;
  std::vector<int32_t> tool_markers_;  // the tool-call format's, then the thinking markers
};

}  // namespace sparrow::server
