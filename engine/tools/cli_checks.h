#pragma once
// Numeric checks for the CLI's flags whose refusal says what is wanted ("must be above 0 and at
// most 16777216, not -5"): CLI11's PositiveNumber and NonNegativeNumber name the largest double,
// a number of 309 digits, as their bound.
#include <CLI/CLI.hpp>

namespace sparrow::tools {

// A number above 0 and at most `max`.
CLI::Validator AboveZero(double max);
// A number of at least 0 and at most `max`.
CLI::Validator ZeroOrMore(double max);

}  // namespace sparrow::tools
