#pragma once
// The Jinja lexer: splits template source into text and the tokens inside {{ }} and {% %}
// tags, applying whitespace control ({%- -%}, trim_blocks, lstrip_blocks) exactly as jinja2's
// lexer does, and dropping {# #} comments. Pure function; thread-safe.
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/result.h"

namespace sparrow::jinja {

struct LexOptions {
  bool trim_blocks = true;    // drop the first newline after a block tag
  bool lstrip_blocks = true;  // drop spaces and tabs before a block tag at the start of a line
};

struct Token {
  enum class Type {
    kText,        // template data between tags
    kVarBegin,    // {{
    kVarEnd,      // }}
    kBlockBegin,  // {%
    kBlockEnd,    // %}
    kName,
    kString,  // value holds the unescaped string
    kInt,
    kFloat,
    kOp,  // value holds the operator text
    kEnd,
  };
  Type type;
  std::string value;
  int line;
  int column;
};

// "chat template line L:C: <what>": the one prefix every error of a template carries.
std::string Located(int line, int column, std::string_view what);

Result<std::vector<Token>> Lex(std::string_view source, const LexOptions& options);

}  // namespace sparrow::jinja
