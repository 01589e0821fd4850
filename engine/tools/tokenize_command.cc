#include "engine/tools/tokenize_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>

#include "engine/model/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"

namespace sparrow::tools {

void RegisterTokenizeCommand(CLI::App& app, TokenizeOptions& o, int& exit_code) {
  CLI::App* cmd = app.add_subcommand("tokenize", "Print the token ids and pieces of a text");
  cmd->add_option("-m,--model", o.model, "GGUF file with the vocabulary")->required();
  cmd->add_option("text", o.text, "Text to tokenize")->required();
  cmd->add_flag("--no-bos", o.no_bos, "Do not add the BOS/EOS tokens the vocabulary asks for");
  cmd->add_flag("--special", o.parse_special, "Parse special tokens written in the text");
  cmd->add_flag("--ids", o.ids_only, "Print only the ids, as a JSON list");
  cmd->callback([&o, &exit_code] { exit_code = RunTokenize(o); });
}

int RunTokenize(const TokenizeOptions& o) {
  auto file = GgufFile::Open(o.model);
  if (!file.ok()) {
    std::fprintf(stderr, "sparrow tokenize: %s\n", file.status().ToString().c_str());
    return 1;
  }
  auto tok = LoadTokenizer(**file);
  if (!tok.ok()) {
    std::fprintf(stderr, "sparrow tokenize: %s\n",
                 tok.status().WithContext(o.model).ToString().c_str());
    return 1;
  }
  const auto ids = (*tok)->Tokenize(o.text, !o.no_bos, o.parse_special);
  if (o.ids_only) {
    std::printf("[");
    for (size_t i = 0; i < ids.size(); ++i) std::printf(i ? ", %d" : "%d", ids[i]);
    std::printf("]\n");
    return 0;
  }
  for (int32_t id : ids) {
    std::string shown;
    for (char c : (*tok)->piece(id, /*special=*/true)) {
      const auto u = static_cast<unsigned char>(c);
      if (c == '\n')
        shown += "\\n";
      else if (c == '\t')
        shown += "\\t";
      else if (u < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", u);
        shown += buf;
      } else
        shown += c;
    }
    std::printf("%6d -> '%s'\n", id, shown.c_str());
  }
  std::printf("%zu tokens\n", ids.size());
  return 0;
}

}  // namespace sparrow::tools
