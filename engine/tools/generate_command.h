#pragma once
// `sparrow generate`: runs a model on a prompt and streams the continuation.
#include <cstdint>
#include <string>

#include "engine/runtime/sampler.h"
#include "engine/tools/kv_type_flags.h"
#include "engine/tools/sparsity_flags.h"
#include "engine/tools/spec_flags.h"

namespace CLI {
class App;
}

namespace sparrow::tools {

struct GenerateCommandOptions {
  std::string model;
  std::string prompt;
  std::string prompt_file;
  int64_t n_predict = 128;
  int64_t n_ctx = 0;  // 0: the model's training context, at most 4096
  int64_t n_batch = 512;
  int threads = 0;  // 0: all hardware threads
  bool json = false;
  bool parse_special = false;
  bool no_echo = false;
  SamplingParams sampling;
  SparsityFlags sparse;
  KvTypeFlags kv;
  SpecFlags spec;  // with a drafter, generation runs through the engine loop
};

void RegisterGenerateCommand(CLI::App& app, GenerateCommandOptions& opts, int& exit_code);
int RunGenerate(const GenerateCommandOptions& opts);

}  // namespace sparrow::tools
