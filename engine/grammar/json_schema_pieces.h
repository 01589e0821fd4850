#pragma once
// The building blocks of JSON Schema grammars that need no schema: GBNF literals, regex
// patterns and integer ranges written as GBNF expressions. Internal to engine/grammar.
// Stateless; thread-safe.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/result.h"

namespace sparrow::grammar {

// `text` as a GBNF string literal, quotes included.
std::string GbnfLiteral(std::string_view text);
// "(a | b | c)".
std::string GbnfAlternatives(const std::vector<std::string>& alts);

// A GBNF expression for the contents (between the quotes) of a JSON string whose value fully
// matches `pattern`; InvalidArgument / Unsupported for what it cannot read.
Result<std::string> RegexToGbnf(std::string_view pattern, int max_depth);

// A GBNF expression for the decimal integers in [lo, hi] (either end open; lo <= hi), no
// leading zeros.
std::string IntegerRangeGbnf(std::optional<int64_t> lo, std::optional<int64_t> hi);

// A GBNF expression for decimal numbers in [lo, hi] (integer ends, either open; lo <= hi), with up
// to 16 fraction digits and no exponent: a subset of the reals in the range, never more.
std::string NumberRangeGbnf(std::optional<int64_t> lo, std::optional<int64_t> hi);

}  // namespace sparrow::grammar
