#pragma once
// Helpers of the grammar tests: run a compiled grammar over a whole string.
#include <memory>
#include <string_view>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/grammar_dfa.h"

namespace sparrow::grammar::testing {

// True when the grammar matches all of `text`.
inline bool FullMatch(GrammarDfa& dfa, std::string_view text) {
  GrammarDfa::StateId s = dfa.initial();
  for (char c : text) {
    if (s == GrammarDfa::kDead) return false;
    s = dfa.Step(s, static_cast<uint8_t>(c));
  }
  return s != GrammarDfa::kDead && dfa.Accepts(s);
}

// True when `text` can be continued into a match (every prefix of a match is live).
inline bool LivePrefix(GrammarDfa& dfa, std::string_view text) {
  GrammarDfa::StateId s = dfa.initial();
  for (char c : text) {
    if (s == GrammarDfa::kDead) return false;
    s = dfa.Step(s, static_cast<uint8_t>(c));
  }
  return s != GrammarDfa::kDead;
}

inline std::shared_ptr<const Grammar> MustParse(std::string_view gbnf) {
  auto g = ParseGbnf(gbnf);
  if (!g.ok()) return nullptr;
  return std::make_shared<const Grammar>(std::move(g).value());
}

}  // namespace sparrow::grammar::testing
