#pragma once
// `sparrow tokenize -m MODEL "text"`: prints the token ids and pieces of a text.
#include <string>

namespace CLI {
class App;
}

namespace sparrow::tools {

struct TokenizeOptions {
  std::string model;
  std::string text;
  bool no_bos = false;
  bool parse_special = false;
  bool ids_only = false;
};

void RegisterTokenizeCommand(CLI::App& app, TokenizeOptions& opts, int& exit_code);
int RunTokenize(const TokenizeOptions& opts);

}  // namespace sparrow::tools
