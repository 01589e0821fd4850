#pragma once
// Grammar: a context-free grammar over bytes, compiled from GBNF (gbnf_parser.h) and immutable
// afterwards, so one compiled grammar is shared by every sequence that uses it (thread-safe).
// Rules are lists of alternatives; an alternative is a sequence of symbols, each a byte range
// or a reference to a rule. Character classes and non-ASCII literals were lowered to UTF-8 byte
// sequences at compile time, so a matcher consumes a token's bytes one at a time and never
// needs to decode UTF-8 (a token ending in half a character is handled like any other prefix).
// Left recursion is refused at compile time: the stack matcher could not expand it.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/common/result.h"

namespace sparrow::grammar {

// Bounds on client-supplied grammars: exceeding one is an InvalidArgument, never a crash.
struct GrammarLimits {
  size_t max_text_bytes = 1 << 20;  // the GBNF source
  int max_nesting = 64;             // parentheses inside parentheses
  size_t max_symbols = 1 << 20;     // after repetitions are expanded and classes lowered
  size_t max_rules = 1 << 16;       // named plus generated
  uint32_t max_repetition = 10000;  // the m and n of {m,n}
};

struct Symbol {
  enum class Kind : uint8_t { kEnd, kBytes, kRule };
  Kind kind = Kind::kEnd;
  uint8_t lo = 0, hi = 0;  // kBytes: the inclusive byte range
  uint32_t rule = 0;       // kRule: the rule referred to

  static Symbol End() { return {}; }
  static Symbol Bytes(uint8_t lo, uint8_t hi) { return {Kind::kBytes, lo, hi, 0}; }
  static Symbol Rule(uint32_t r) { return {Kind::kRule, 0, 0, r}; }
  bool Matches(uint8_t b) const { return kind == Kind::kBytes && b >= lo && b <= hi; }
};

// One alternative as the builder holds it: a sequence of symbols without the terminating End.
using Sequence = std::vector<Symbol>;

class Grammar {
 public:
  // Builds from rules given as alternatives of sequences; `names[i]` names rule i in errors.
  // InvalidArgument when a rule is left recursive (directly or through rules that can match
  // nothing) or when a reference points outside the rules.
  static Result<Grammar> Create(std::vector<std::vector<Sequence>> rules,
                                std::vector<std::string> names, uint32_t root);

  uint32_t root() const { return root_; }
  size_t rule_count() const { return alt_starts_.size(); }
  // Positions in symbols() where each alternative of `rule` starts; each ends with kEnd.
  std::span<const uint32_t> alternatives(uint32_t rule) const { return alt_starts_[rule]; }
  const std::vector<Symbol>& symbols() const { return symbols_; }
  const Symbol& at(uint32_t pos) const { return symbols_[pos]; }
  const std::string& name(uint32_t rule) const { return names_[rule]; }

 private:
  std::vector<Symbol> symbols_;
  std::vector<std::vector<uint32_t>> alt_starts_;
  std::vector<std::string> names_;
  uint32_t root_ = 0;
};

}  // namespace sparrow::grammar
