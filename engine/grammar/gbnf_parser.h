#pragma once
// GBNF, llama-server's grammar syntax, compiled to a byte-level Grammar:
//   name ::= alternatives          rules; `root` is where matching starts
//   a b | c ( d | e )              sequences, alternation, groups
//   x* x+ x? x{m} x{m,} x{m,n} x{,n}   repetition
//   "lit\n\x41\u00e9"  [a-z0-9_]  [^"\\]  .   literals, classes, negated classes, any character
//   # comment                      to the end of the line
// Escapes: \t \r \n \\ \" \[ \] \- \^ \xHH \uHHHH \UHHHHHHHH. Newlines are plain white space: a
// rule ends where the next `name ::=` begins (so every grammar llama-server reads means the same
// here). Errors are InvalidArgument naming the line and column ("grammar: line 3, column 7:
// ..."); every limit in GrammarLimits is checked, so a hostile grammar is refused, not run.
// Stateless; thread-safe.
#include <string_view>

#include "engine/common/result.h"
#include "engine/grammar/grammar.h"

namespace sparrow::grammar {

Result<Grammar> ParseGbnf(std::string_view text, const GrammarLimits& limits = {});

}  // namespace sparrow::grammar
