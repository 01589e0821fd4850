#pragma once
// `sparrow perplexity`: a model's perplexity on a text, as llama-perplexity computes it, dense or
// at a sparsity setting (perplexity.h).
#include <cstdint>
#include <string>

#include "engine/tools/kv_type_flags.h"
#include "engine/tools/sparsity_flags.h"

namespace CLI {
class App;
}

namespace sparrow::tools {

struct PerplexityOptions {
  std::string model;
  std::string text_file;
  int64_t n_ctx = 512;
  int threads = 0;
  bool json = false;
  SparsityFlags sparse;
  KvTypeFlags kv;
};

void RegisterPerplexityCommand(CLI::App& app, PerplexityOptions& opts, int& exit_code);
int RunPerplexity(const PerplexityOptions& opts);

}  // namespace sparrow::tools
