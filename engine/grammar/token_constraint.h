#pragma once
// TokenConstraint: what the scheduler calls to keep one sequence inside a grammar. Per step:
//
//   constraint.Mask(logits);          // refused tokens get -inf (before sampling, after bias)
//   TokenId t = sampler.Sample(...);
//   constraint.Accept(t);             // advances the grammar by the token's bytes
//
// End-of-generation tokens are allowed only while CanEnd() (the grammar has matched a whole
// output); once one is accepted the constraint is finished() and allows nothing. Tokens with no
// bytes (control tokens) are never allowed. A state's allowed set is computed by walking the
// vocabulary trie through the grammar's lazily built automaton and cached per state, so a
// state met again (inside a long string, say) costs a copy.
// Errors: Accept of a token the grammar refuses is InvalidArgument (the state is unchanged);
// a grammar whose matcher outgrows MatcherLimits gives ResourceExhausted. Not thread-safe: one
// per sequence; the Grammar and TokenTrie it holds are shared and immutable. It is the engine
// loop's OutputConstraint (engine/runtime/output_constraint.h).
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/common/result.h"
#include "engine/grammar/grammar.h"
#include "engine/grammar/grammar_dfa.h"
#include "engine/grammar/token_trie.h"
#include "engine/runtime/output_constraint.h"

namespace sparrow::grammar {

// One bit per token id: bit (id % 64) of word id / 64.
using TokenBitmask = std::vector<uint64_t>;

class TokenConstraint final : public OutputConstraint {
 public:
  static Result<std::unique_ptr<TokenConstraint>> Create(std::shared_ptr<const Grammar> grammar,
                                                         std::shared_ptr<const TokenTrie> trie,
                                                         MatcherLimits limits = {});

  // The tokens allowed next, sized for the trie's vocabulary.
  Result<const TokenBitmask*> AllowedTokens();
  // Sets every refused token's logit to -inf; logits past the vocabulary are refused too.
  // InvalidArgument when no token at all is allowed (the sequence cannot go on).
  Status Mask(std::span<float> logits) override;
  // Advances by `id`'s bytes, or finishes on an end-of-generation token.
  Status Accept(TokenId id) override;
  // Finished, or the grammar has matched and no byte can follow.
  bool Complete() const override { return finished_ || dfa_.IsTerminal(state_); }
  // Computes (and caches) the current state's mask.
  void Prepare() override { (void)AllowedTokens(); }
  // Advances by bytes that did not come as one token (what followed a lazy grammar's trigger
  // in the token that completed it). InvalidArgument when the grammar refuses them.
  Status AcceptBytes(std::string_view bytes);
  const TokenTrie& trie() const { return *trie_; }
  // Whether `id` would be accepted now, without computing the whole mask.
  bool IsAllowed(TokenId id);
  bool CanEnd() const { return !finished_ && dfa_.Accepts(state_); }
  bool finished() const { return finished_; }
  // The automaton's size, for tests and stats.
  const GrammarDfa& dfa() const { return dfa_; }
  // Masks computed by walking the trie (the others came from the per-state cache).
  size_t masks_computed() const { return masks_computed_; }

 private:
  TokenConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie,
                  MatcherLimits limits);
  void ComputeMask(TokenBitmask* bits);
  GrammarDfa::StateId Walk(GrammarDfa::StateId s, std::string_view bytes);

  static constexpr size_t kMaxCachedMasks = 64;
  std::shared_ptr<const TokenTrie> trie_;
  GrammarDfa dfa_;
  GrammarDfa::StateId state_;
  bool finished_ = false;
  size_t masks_computed_ = 0;
  std::unordered_map<GrammarDfa::StateId, TokenBitmask> masks_;
  std::vector<GrammarDfa::StateId> walk_states_;  // per trie depth, reused
  TokenBitmask empty_;
};

}  // namespace sparrow::grammar
