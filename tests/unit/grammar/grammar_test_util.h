#pragma once
// Helpers of the grammar tests: run a compiled grammar over a whole string.
#include <memory>
#include <random>
#include <string>
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

// `text` after 1-4 random single-character insertions, deletions or replacements drawn from
// `alphabet`: hostile input that stays close to a valid one.
inline std::string Mutate(std::string text, std::string_view alphabet, std::mt19937& rng) {
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    const size_t at = rng() % (text.size() + 1);
    const char c = alphabet[rng() % alphabet.size()];
    const uint32_t op = rng() % 3;
    if (op == 0) {
      text.insert(at, 1, c);
    } else if (at < text.size()) {
      if (op == 1) {
        text.erase(at, 1);
      } else {
        text[at] = c;
      }
    }
  }
  return text;
}

inline std::shared_ptr<const Grammar> MustParse(std::string_view gbnf) {
  auto g = ParseGbnf(gbnf);
  if (!g.ok()) return nullptr;
  return std::make_shared<const Grammar>(std::move(g).value());
}

}  // namespace sparrow::grammar::testing
