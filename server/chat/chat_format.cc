#include "server/chat/chat_format.h"

namespace sparrow::server {
namespace {

std::string TokenText(const Tokenizer& vocab, TokenId id) {
  return id == kNoToken ? std::string() : std::string(vocab.token_text(id));
}

// The ids of `markers` the vocabulary has as tokens; control tokens are otherwise not
// rendered as text.
std::vector<int32_t> MarkerIds(const Tokenizer& vocab, const std::vector<std::string>& markers) {
  std::vector<int32_t> ids;
  for (const std::string& m : markers) {
    const TokenId id = vocab.FindToken(m);
    if (id != kNoToken) ids.push_back(id);
  }
  return ids;
}

}  // namespace

ChatFormat::ChatFormat(std::string setting, const Tokenizer& vocab, std::string origin)
    : renderer_(std::move(setting), TokenText(vocab, vocab.bos()),
                TokenText(vocab, vocab.special(SpecialToken::kEos)), vocab.add_bos(),
                std::move(origin)),
      tool_format_(ToolCallFormatFor(renderer_.setting())) {
  const std::vector<std::string> thinking = {"<think>", "</think>"};
  std::vector<std::string> with_tools = ToolCallMarkers(tool_format_);
  with_tools.insert(with_tools.end(), thinking.begin(), thinking.end());
  thinking_markers_ = MarkerIds(vocab, thinking);
  tool_markers_ = MarkerIds(vocab, with_tools);
}

}  // namespace sparrow::server
