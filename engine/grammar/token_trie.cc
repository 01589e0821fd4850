#include "engine/grammar/token_trie.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace sparrow::grammar {

TokenTrie TokenTrie::FromTokenizer(const Tokenizer& tokenizer) {
  std::vector<std::string> pieces(tokenizer.n_vocab());
  for (TokenId id = 0; id < tokenizer.n_vocab(); ++id) {
    if (!tokenizer.IsEog(id)) pieces[id] = std::string(tokenizer.piece(id, false));
  }
  return FromPieces(std::move(pieces), tokenizer.eog_ids());
}

bool TokenTrie::IsEog(TokenId id) const {
  return std::binary_search(eog_.begin(), eog_.end(), id);
}

TokenTrie TokenTrie::FromPieces(std::vector<std::string> pieces, std::vector<TokenId> eog) {
  TokenTrie t;
  t.pieces_ = std::move(pieces);
  std::sort(eog.begin(), eog.end());
  for (TokenId id : eog) {
    if (id >= 0 && id < t.vocab_size()) {
      t.eog_.push_back(id);
      t.pieces_[id].clear();
    }
  }
  constexpr size_t kMaxPiece = std::numeric_limits<uint16_t>::max();
  std::vector<TokenId> order;
  for (TokenId id = 0; id < t.vocab_size(); ++id) {
    if (!t.pieces_[id].empty() && t.pieces_[id].size() <= kMaxPiece) order.push_back(id);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](TokenId a, TokenId b) { return t.pieces_[a] < t.pieces_[b]; });
  // Sorted pieces arrive in preorder: keep the open path, close nodes the next piece leaves.
  t.nodes_.push_back({0, 0, 0, 0, 0});
  std::vector<uint32_t> path = {0};
  std::string_view prev;
  for (TokenId id : order) {
    const std::string_view p = t.pieces_[id];
    size_t common = 0;
    while (common < p.size() && common < prev.size() && p[common] == prev[common]) ++common;
    while (path.size() > common + 1) {
      t.nodes_[path.back()].subtree_end = static_cast<uint32_t>(t.nodes_.size());
      path.pop_back();
    }
    for (size_t d = common; d < p.size(); ++d) {
      const uint32_t tok = static_cast<uint32_t>(t.token_ids_.size());
      path.push_back(static_cast<uint32_t>(t.nodes_.size()));
      t.nodes_.push_back({static_cast<uint8_t>(p[d]), static_cast<uint16_t>(d + 1), 0, tok, tok});
    }
    Node& last = t.nodes_[path.back()];
    if (last.tokens_begin == last.tokens_end) {
      last.tokens_begin = last.tokens_end = static_cast<uint32_t>(t.token_ids_.size());
    }
    t.token_ids_.push_back(id);
    ++last.tokens_end;
    t.max_depth_ = std::max(t.max_depth_, p.size());
    prev = p;
  }
  while (!path.empty()) {
    t.nodes_[path.back()].subtree_end = static_cast<uint32_t>(t.nodes_.size());
    path.pop_back();
  }
  return t;
}

}  // namespace sparrow::grammar
