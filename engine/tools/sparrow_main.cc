// sparrow: the command-line tool for models: generate text, inspect and tokenize GGUF files.
#include <CLI/CLI.hpp>

#include "engine/tools/generate_command.h"
#include "engine/tools/info_command.h"
#include "engine/tools/tokenize_command.h"

int main(int argc, char** argv) {
  CLI::App app{
      "sparrow: run and inspect GGUF language models on the CPU.\n"
      "Examples:\n"
      "  sparrow generate -m model.gguf -p \"Once upon a time\" -n 48 --temp 0\n"
      "  sparrow info model.gguf\n"
      "  sparrow tokenize -m model.gguf \"Hello world\""};
  app.require_subcommand(1);
  int exit_code = 0;
  sparrow::tools::GenerateCommandOptions generate;
  sparrow::tools::RegisterGenerateCommand(app, generate, exit_code);
  sparrow::tools::InfoOptions info;
  sparrow::tools::RegisterInfoCommand(app, info, exit_code);
  sparrow::tools::TokenizeOptions tokenize;
  sparrow::tools::RegisterTokenizeCommand(app, tokenize, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}
