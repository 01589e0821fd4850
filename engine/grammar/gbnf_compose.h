#pragma once
// Putting GBNF texts together: several JSON schemas' grammars in one (a tool call's grammar
// holds each tool's parameters) need their rule names kept apart. Pure; thread-safe.
#include <string>
#include <string_view>

namespace sparrow::grammar {

// `gbnf` with every rule name (defined or referred to) prefixed by `prefix`: "root ::= a" with
// "t0-" gives "t0-root ::= t0-a". Literals, character classes, repetition counts and comments
// are left as they are. Text that is not valid GBNF stays invalid (ParseGbnf says where).
std::string PrefixGbnfRules(std::string_view gbnf, std::string_view prefix);

}  // namespace sparrow::grammar
