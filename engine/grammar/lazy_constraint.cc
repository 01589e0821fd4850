#include "engine/grammar/lazy_constraint.h"

#include <algorithm>
#include <utility>

namespace sparrow::grammar {

LazyConstraint::LazyConstraint(std::unique_ptr<TokenConstraint> inner, std::string trigger,
                               std::vector<TokenId> trigger_ids)
    : inner_(std::move(inner)),
      trigger_(std::move(trigger)),
      trigger_ids_(std::move(trigger_ids)) {}

Status LazyConstraint::Mask(std::span<float> logits) {
  if (!active_) return Status::Ok();
  return inner_->Mask(logits);
}

void LazyConstraint::Prepare() {
  if (active_) inner_->Prepare();
}

Status LazyConstraint::Accept(int32_t token) {
  if (active_) return inner_->Accept(token);
  if (std::find(trigger_ids_.begin(), trigger_ids_.end(), token) != trigger_ids_.end()) {
    active_ = true;
    return Status::Ok();
  }
  const TokenTrie& trie = inner_->trie();
  if (token < 0 || token >= trie.vocab_size()) return Status::Ok();
  tail_.append(trie.piece(token));
  if (trigger_.empty()) return Status::Ok();
  if (const size_t at = tail_.find(trigger_); at != std::string::npos) {
    active_ = true;
    const std::string after = tail_.substr(at + trigger_.size());
    tail_.clear();
    return inner_->AcceptBytes(after);
  }
  // Only a prefix of the trigger can still matter.
  if (tail_.size() >= trigger_.size()) tail_.erase(0, tail_.size() - (trigger_.size() - 1));
  return Status::Ok();
}

}  // namespace sparrow::grammar
