#pragma once
// `sparrow mkmodel`: writes a synthetic random-weight GGUF of a real model's shape.
#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace sparrow::tools {

struct MkModelOptions {
  std::string shape;
  std::string type = "q8_0";
  std::string out;
  std::string vocab = "../shared/models/vocab/ggml-vocab-llama-spm.gguf";
  int64_t layers = 0;  // 0: the shape's depth
  uint64_t seed = 1;
  int threads = 0;              // 0: all hardware threads
  std::string format = "gguf";  // or "pwri" (PowerInfer's sparse format)
  std::string ffn = "relu";     // pwri: relu (arch llama) or drelu (arch bamboo)
  int64_t predictor_rank = 0;
  double active = 0.5;
  std::string hot_profile = "uniform";
  double expert_skew = 0.0;     // --expert-skew
  std::string balance_routers;  // --balance-routers TEXT
  int64_t balance_tokens = 256;
};

void RegisterMkModelCommand(CLI::App& app, MkModelOptions& opts, int& exit_code);
int RunMkModel(const MkModelOptions& opts);

}  // namespace sparrow::tools
