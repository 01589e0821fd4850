#pragma once
// `sparrow info MODEL.gguf`: prints a GGUF file's metadata and tensor table.
#include <string>

namespace CLI {
class App;
}

namespace sparrow::tools {

struct InfoOptions {
  std::string model;
  bool all_values = false;  // print long arrays in full
};

void RegisterInfoCommand(CLI::App& app, InfoOptions& opts, int& exit_code);
int RunInfo(const InfoOptions& opts);

}  // namespace sparrow::tools
