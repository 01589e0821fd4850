#include "engine/tokenizer/spm_encoder.h"

#include <algorithm>
#include <queue>

#include "engine/tokenizer/unicode.h"

namespace sparrow::tokenizer {
namespace {

struct Symbol {
  int prev;
  int next;
  size_t start;  // byte offset into the text
  size_t len;    // 0 once merged into its left neighbour
};

struct Bigram {
  int left;
  int right;
  float score;
  size_t len;
};

// Highest score first; among equal scores the leftmost pair.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

class SpmSession {
 public:
  SpmSession(const Vocab& vocab, std::string_view text) : vocab_(vocab), text_(text) {}

  void Encode(std::vector<TokenId>* out) {
    for (size_t off = 0; off < text_.size();) {
      const size_t len =
          std::min(Utf8SequenceLength(static_cast<uint8_t>(text_[off])), text_.size() - off);
      const int index = static_cast<int>(symbols_.size());
      symbols_.push_back({index - 1, off + len == text_.size() ? -1 : index + 1, off, len});
      off += len;
    }
    for (int i = 1; i < static_cast<int>(symbols_.size()); ++i) TryAddBigram(i - 1, i);

    while (!queue_.empty()) {
      const Bigram b = queue_.top();
      queue_.pop();
      Symbol& left = symbols_[b.left];
      Symbol& right = symbols_[b.right];
      // Stale entry: one side was merged since the pair was queued.
      if (left.len == 0 || right.len == 0 || left.len + right.len != b.len) continue;
      left.len += right.len;
      right.len = 0;
      left.next = right.next;
      if (right.next >= 0) symbols_[right.next].prev = b.left;
      TryAddBigram(left.prev, b.left);
      TryAddBigram(b.left, left.next);
    }

    if (symbols_.empty()) return;
    for (int i = 0; i != -1; i = symbols_[i].next) Emit(symbols_[i], out);
  }

 private:
  void TryAddBigram(int left, int right) {
    if (left < 0 || right < 0) return;
    const size_t len = symbols_[left].len + symbols_[right].len;
    const TokenId id = vocab_.Find(text_.substr(symbols_[left].start, len));
    if (id == kNoToken) return;
    queue_.push({left, right, vocab_.score(id), len});
  }

  // Merged symbols are always tokens; a single character that is not becomes byte tokens.
  void Emit(const Symbol& s, std::vector<TokenId>* out) const {
    const std::string_view piece = text_.substr(s.start, s.len);
    const TokenId id = vocab_.Find(piece);
    if (id != kNoToken) {
      out->push_back(id);
      return;
    }
    for (char c : piece) {
      TokenId byte_id = vocab_.ByteToken(static_cast<uint8_t>(c));
      // A vocabulary without byte tokens: llama.cpp throws here; fall back to <unk>.
      if (byte_id == kNoToken) byte_id = vocab_.special(SpecialToken::kUnk);
      if (byte_id != kNoToken) out->push_back(byte_id);
    }
  }

  const Vocab& vocab_;
  std::string_view text_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue_;
};

}  // namespace

void SpmEncode(const Vocab& vocab, std::string_view text, std::vector<TokenId>* out) {
  SpmSession(vocab, text).Encode(out);
}

}  // namespace sparrow::tokenizer
