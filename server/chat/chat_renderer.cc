#include "server/chat/chat_renderer.h"

#include <spdlog/spdlog.h>

#include "server/chat/chat_context.h"

namespace sparrow::server {
namespace {

bool UsesTools(const std::vector<ChatMessage>& messages, const ChatOptions& o) {
  if (!o.tools.empty()) return true;
  for (const ChatMessage& m : messages) {
    if (m.role == "tool" || !m.tool_calls.empty()) return true;
  }
  return false;
}

}  // namespace

ChatRenderer::ChatRenderer(std::string setting, std::string bos, std::string eos,
                           bool tokenizer_adds_bos, std::string origin)
    : setting_(std::move(setting)),
      origin_(std::move(origin)),
      bos_(std::move(bos)),
      eos_(std::move(eos)),
      drop_bos_(tokenizer_adds_bos),
      family_(ResolveChatTemplate(setting_)) {
  ChatTemplate named;
  if (setting_.empty() || ChatTemplateFromName(setting_, &named)) return;
  auto parsed = jinja::Template::Parse(setting_);
  if (!parsed.ok()) {
    spdlog::warn("chat template: {} cannot be run ({}); using the built-in '{}' template instead",
                 origin_, parsed.status().message(), ChatTemplateName(family_));
    return;
  }
  jinja_.emplace(std::move(*parsed));
  jinja_knows_tools_ = setting_.find("tool") != std::string::npos;
}

Result<RenderedChat> ChatRenderer::Render(const std::vector<ChatMessage>& messages,
                                          const ChatOptions& options) const {
  SPARROW_RETURN_IF_ERROR(ValidateChatMessages(messages));
  // A template that never mentions tools would drop them silently; the family writes them.
  if (jinja_ && (jinja_knows_tools_ || !UsesTools(messages, options))) {
    auto r = RenderWithClientText(
        messages, options, bos_, eos_,
        [this](const nlohmann::ordered_json& ctx) { return jinja_->Render(ctx); });
    if (r.ok()) {
      // The GGUF template writes BOS itself and the tokenizer adds it too: drop the template's,
      // as llama.cpp's server does (a doubled BOS hurts small models).
      const bool client_first = !r->content.empty() && r->content[0].offset == 0;
      if (drop_bos_ && !bos_.empty() && r->text.starts_with(bos_) && !client_first) {
        r->text.erase(0, bos_.size());
        for (auto& c : r->content) c.offset -= bos_.size();
      }
      r->opens_thinking = options.add_generation_prompt && EndsInThinking(r->text);
      return r;
    }
    // The template's own refusal (raise_exception: "roles must alternate") is the client's to fix.
    if (r.status().message().find("raise_exception") != std::string::npos) return r.status();
    if (!warned_.exchange(true)) {
      spdlog::warn(
          "chat template: {} failed ({}); using the built-in '{}' template for such requests",
          origin_, r.status().message(), ChatTemplateName(family_));
    }
  }
  return RenderChatTemplate(messages, family_, options);
}

}  // namespace sparrow::server
