#pragma once
// ChatRenderer: renders the chats of one model. The GGUF's own Jinja template
// (tokenizer.chat_template) runs first; the built-in family it is detected as (chat_families.h)
// serves files without a template, a template setting that names a family, templates that do
// not mention tools when a request has them, and (with a warning logged once) templates the
// interpreter rejects. Either way the text clients wrote never becomes control tokens
// (RenderedChat::content). Immutable once made; thread-safe.
#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "engine/jinja/jinja_template.h"
#include "server/chat/chat_template.h"

namespace sparrow::server {

class ChatRenderer {
 public:
  // `setting`: a family name (the config's chat_template) or the GGUF's Jinja text ("" means
  // ChatML); `bos_token` and `eos_token`: the vocabulary's texts, for the template's context;
  // `tokenizer_adds_bos`: the tokenizer puts BOS in front, so a template's own is dropped;
  // `origin`: where the Jinja text came from, for the warnings that name it (e.g.
  // "tokenizer.chat_template of 'm.gguf'").
  ChatRenderer(std::string setting, std::string bos_token, std::string eos_token,
               bool tokenizer_adds_bos = true, std::string origin = "the model's Jinja template");

  Result<RenderedChat> Render(const std::vector<ChatMessage>& messages,
                              const ChatOptions& options) const;

  const std::string& setting() const { return setting_; }
  bool has_jinja() const { return jinja_.has_value(); }
  ChatTemplate family() const { return family_; }

 private:
  std::string setting_;
  std::string origin_;
  std::string bos_, eos_;
  bool drop_bos_;
  ChatTemplate family_;
  std::optional<jinja::Template> jinja_;
  bool jinja_knows_tools_ = false;
  mutable std::atomic<bool> warned_{false};
};

}  // namespace sparrow::server
