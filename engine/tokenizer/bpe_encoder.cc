#include "engine/tokenizer/bpe_encoder.h"

#include <algorithm>
#include <queue>
#include <string>

#include "engine/tokenizer/pretokenizer.h"
#include "engine/tokenizer/unicode.h"

namespace sparrow::tokenizer {
namespace {

struct Symbol {
  int prev;
  int next;
  size_t start;
  size_t len;  // 0 once merged into its left neighbour
};

struct Bigram {
  int left;
  int right;
  int32_t rank;
  size_t len;
};

// Lowest rank first; among equal ranks the leftmost pair.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

class BpeWord {
 public:
  BpeWord(const Vocab& vocab, std::string_view word) : vocab_(vocab), word_(word) {}

  void Encode(std::vector<TokenId>* out) {
    if (vocab_.ignore_merges()) {
      const TokenId whole = vocab_.Find(word_);
      if (whole != kNoToken) {
        out->push_back(whole);
        return;
      }
    }
    for (size_t off = 0; off < word_.size();) {
      const size_t len =
          std::min(Utf8SequenceLength(static_cast<uint8_t>(word_[off])), word_.size() - off);
      const int index = static_cast<int>(symbols_.size());
      symbols_.push_back({index - 1, off + len == word_.size() ? -1 : index + 1, off, len});
      off += len;
    }
    for (int i = 1; i < static_cast<int>(symbols_.size()); ++i) TryAddBigram(i - 1, i);

    while (!queue_.empty()) {
      const Bigram b = queue_.top();
      queue_.pop();
      Symbol& left = symbols_[b.left];
      Symbol& right = symbols_[b.right];
      // Stale entry: the pair's text changed since it was queued (equal length means equal
      // text, as both symbols keep their start).
      if (left.len == 0 || right.len == 0 || left.len + right.len != b.len) continue;
      left.len += right.len;
      right.len = 0;
      left.next = right.next;
      if (right.next >= 0) symbols_[right.next].prev = b.left;
      TryAddBigram(left.prev, b.left);
      TryAddBigram(b.left, left.next);
    }

    for (const Symbol& s : symbols_) {
      if (s.len == 0) continue;
      const std::string_view piece = word_.substr(s.start, s.len);
      const TokenId id = vocab_.Find(piece);
      if (id != kNoToken) {
        out->push_back(id);
        continue;
      }
      // Not a token: emit whichever single bytes of it are tokens, as llama.cpp does.
      for (size_t i = 0; i < piece.size(); ++i) {
        const TokenId b = vocab_.Find(piece.substr(i, 1));
        if (b != kNoToken) out->push_back(b);
      }
    }
  }

 private:
  void TryAddBigram(int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols_[left];
    const Symbol& r = symbols_[right];
    const int32_t rank = vocab_.BpeRank(word_.substr(l.start, l.len), word_.substr(r.start, r.len));
    if (rank < 0) return;
    queue_.push({left, right, rank, l.len + r.len});
  }

  const Vocab& vocab_;
  std::string_view word_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue_;
};

}  // namespace

void BpeEncode(const Vocab& vocab, std::string_view text, std::vector<TokenId>* out) {
  for (const std::string& word : PreTokenize(text, vocab.pre())) BpeWord(vocab, word).Encode(out);
}

}  // namespace sparrow::tokenizer
