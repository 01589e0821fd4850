#pragma once
// TokenTrie: the vocabulary's token bytes as a trie laid out in preorder, so the tokens a
// grammar state allows are found in one pass that skips a whole subtree as soon as its prefix
// is refused. Built once per tokenizer and immutable afterwards (thread-safe to share).
// Tokens with no bytes (control, unknown) are never in the trie; end-of-generation tokens are
// listed apart, since they end the output instead of adding to it.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace sparrow::grammar {

class TokenTrie {
 public:
  struct Node {
    uint8_t byte;                       // the edge into this node
    uint16_t depth;                     // bytes from the root; the root is node 0 at depth 0
    uint32_t subtree_end;               // first node after this node's subtree
    uint32_t tokens_begin, tokens_end;  // range in token_ids() of tokens ending here
  };

  // The bytes of each token as the detokenizer emits them (Tokenizer::piece, special=false).
  static TokenTrie FromTokenizer(const Tokenizer& tokenizer);
  // `pieces[id]` are token id's bytes ("" = never allowed); `eog` the end-of-generation ids.
  static TokenTrie FromPieces(std::vector<std::string> pieces, std::vector<TokenId> eog);

  int32_t vocab_size() const { return static_cast<int32_t>(pieces_.size()); }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<TokenId>& token_ids() const { return token_ids_; }
  const std::vector<TokenId>& eog_ids() const { return eog_; }
  bool IsEog(TokenId id) const;
  std::string_view piece(TokenId id) const { return pieces_[id]; }
  size_t max_depth() const { return max_depth_; }

 private:
  std::vector<std::string> pieces_;
  std::vector<Node> nodes_;
  std::vector<TokenId> token_ids_;
  std::vector<TokenId> eog_;  // sorted
  size_t max_depth_ = 0;
};

}  // namespace sparrow::grammar
