#include "engine/grammar/token_constraint.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace sparrow::grammar {

TokenConstraint::TokenConstraint(std::shared_ptr<const Grammar> grammar,
                                 std::shared_ptr<const TokenTrie> trie, MatcherLimits limits)
    : trie_(std::move(trie)), dfa_(std::move(grammar), limits), state_(dfa_.initial()) {
  empty_.assign((trie_->vocab_size() + 63) / 64, 0);
}

Result<std::unique_ptr<TokenConstraint>> TokenConstraint::Create(
    std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie,
    MatcherLimits limits) {
  std::unique_ptr<TokenConstraint> c(
      new TokenConstraint(std::move(grammar), std::move(trie), limits));
  if (c->state_ == GrammarDfa::kDead) {
    return ResourceExhausted("grammar: the start of the grammar exceeds the matcher's limits");
  }
  return c;
}

GrammarDfa::StateId TokenConstraint::Walk(GrammarDfa::StateId s, std::string_view bytes) {
  for (char c : bytes) {
    s = dfa_.Step(s, static_cast<uint8_t>(c));
    if (s == GrammarDfa::kDead) break;
  }
  return s;
}

void TokenConstraint::ComputeMask(TokenBitmask* bits) {
  bits->assign(empty_.size(), 0);
  const std::vector<TokenTrie::Node>& nodes = trie_->nodes();
  const std::vector<TokenId>& ids = trie_->token_ids();
  walk_states_.resize(trie_->max_depth() + 1);
  walk_states_[0] = state_;
  for (size_t i = 1; i < nodes.size();) {
    const TokenTrie::Node& n = nodes[i];
    const GrammarDfa::StateId next = dfa_.Step(walk_states_[n.depth - 1], n.byte);
    if (next == GrammarDfa::kDead) {
      i = n.subtree_end;
      continue;
    }
    walk_states_[n.depth] = next;
    for (uint32_t k = n.tokens_begin; k < n.tokens_end; ++k) {
      (*bits)[ids[k] >> 6] |= uint64_t{1} << (ids[k] & 63);
    }
    ++i;
  }
  if (dfa_.Accepts(state_)) {
    for (TokenId id : trie_->eog_ids()) (*bits)[id >> 6] |= uint64_t{1} << (id & 63);
  }
}

Result<const TokenBitmask*> TokenConstraint::AllowedTokens() {
  if (finished_) return &empty_;
  if (dfa_.NearLimits()) {
    state_ = dfa_.Compact(state_);
    masks_.clear();
  }
  auto it = masks_.find(state_);
  if (it != masks_.end()) return &it->second;
  if (masks_.size() >= kMaxCachedMasks) masks_.clear();
  TokenBitmask bits;
  ComputeMask(&bits);
  ++masks_computed_;
  if (dfa_.overflowed()) {
    return ResourceExhausted(
        "grammar: the matcher outgrew its limits (too ambiguous or too deeply nested)");
  }
  return &masks_.emplace(state_, std::move(bits)).first->second;
}

Status TokenConstraint::Mask(std::span<float> logits) {
  SPARROW_ASSIGN_OR_RETURN(const TokenBitmask* bits, AllowedTokens());
  if (std::all_of(bits->begin(), bits->end(), [](uint64_t w) { return w == 0; })) {
    return InvalidArgument(
        "grammar: no token of the vocabulary can continue the output here (the grammar asks "
        "for bytes no token spells)");
  }
  constexpr float kRefused = -std::numeric_limits<float>::infinity();
  const size_t n = std::min(logits.size(), static_cast<size_t>(trie_->vocab_size()));
  for (size_t w = 0; w * 64 < n; ++w) {
    const uint64_t word = (*bits)[w];
    if (word == ~uint64_t{0}) continue;
    const size_t end = std::min(n, w * 64 + 64);
    for (size_t id = w * 64; id < end; ++id) {
      if (!((word >> (id & 63)) & 1)) logits[id] = kRefused;
    }
  }
  for (size_t id = n; id < logits.size(); ++id) logits[id] = kRefused;
  return Status::Ok();
}

bool TokenConstraint::IsAllowed(TokenId id) {
  if (finished_ || id < 0 || id >= trie_->vocab_size()) return false;
  if (trie_->IsEog(id)) return dfa_.Accepts(state_);
  const std::string_view bytes = trie_->piece(id);
  return !bytes.empty() && Walk(state_, bytes) != GrammarDfa::kDead;
}

Status TokenConstraint::Accept(TokenId id) {
  if (finished_) return InvalidArgument("grammar: a token after the end of the output");
  if (dfa_.NearLimits()) {
    state_ = dfa_.Compact(state_);
    masks_.clear();
  }
  if (id < 0 || id >= trie_->vocab_size()) {
    return InvalidArgument("grammar: token " + std::to_string(id) + " is outside the vocabulary");
  }
  if (trie_->IsEog(id)) {
    if (!dfa_.Accepts(state_)) {
      return InvalidArgument("grammar: end of generation before the grammar is complete");
    }
    finished_ = true;
    return Status::Ok();
  }
  const std::string_view bytes = trie_->piece(id);
  const GrammarDfa::StateId next = bytes.empty() ? GrammarDfa::kDead : Walk(state_, bytes);
  if (next == GrammarDfa::kDead) {
    if (dfa_.overflowed()) {
      return ResourceExhausted("grammar: the matcher outgrew its limits at token " +
                               std::to_string(id));
    }
    return InvalidArgument("grammar: token " + std::to_string(id) + " is not allowed here");
  }
  state_ = next;
  return Status::Ok();
}

Status TokenConstraint::AcceptBytes(std::string_view bytes) {
  if (finished_) return InvalidArgument("grammar: bytes after the end of the output");
  if (bytes.empty()) return Status::Ok();
  const GrammarDfa::StateId next = Walk(state_, bytes);
  if (next == GrammarDfa::kDead) {
    return InvalidArgument("grammar: the text after the trigger is not allowed here");
  }
  state_ = next;
  return Status::Ok();
}

}  // namespace sparrow::grammar
