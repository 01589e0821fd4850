#pragma once
// The Jinja parser: tokens to a syntax tree, with jinja2's grammar and operator precedence.
// A filter or test jinja2 lacks is an error at parse time, unless it sits in a conditional
// branch, where jinja2 too only fails if the branch runs. Pure function; thread-safe.
#include <vector>

#include "engine/common/result.h"
#include "engine/jinja/ast.h"
#include "engine/jinja/lexer.h"

namespace sparrow::jinja {

// Deeper nesting of statements or expressions than this is refused: the parser and the
// interpreter recurse once per level.
inline constexpr int kMaxNesting = 128;

Result<Body> Parse(std::vector<Token> tokens);

}  // namespace sparrow::jinja
