#pragma once
// Loader for llama.cpp's reference vectors in ../shared/testdata/golden/*.json (schema in that
// folder's README): prompts, their token ids, greedy continuations, top-k logits per step.
#include <cstdint>
#include <string>
#include <vector>

namespace sparrow::testing {

struct GoldenTopK {
  int step = 0;
  int n_past = 0;
  std::vector<int32_t> ids;
  std::vector<float> logits;
};

struct GoldenPrompt {
  std::string prompt;
  bool add_bos = true;
  std::vector<int32_t> prompt_tokens;
  std::vector<int32_t> generated_tokens;
  std::vector<float> margins;  // top1 - top2 at each generation step
  int reliable_prefix_len = 0;
  std::string generated_text_bytes;  // exact bytes (from generated_text_hex)
  std::vector<GoldenTopK> topk;
  std::vector<float> last_prompt_logits;  // empty when n_vocab > 1024
};

struct GoldenFile {
  std::string json_path;
  std::string model_file;  // file name only
  std::string architecture;
  std::string reference;  // llama_cpp_commit: which engine made it ("PowerInfer d3ebd7c")
  int n_vocab = 0;
  std::vector<GoldenPrompt> prompts;
};

GoldenFile LoadGolden(const std::string& json_path);
// All golden/*.json file names (sorted).
std::vector<std::string> ListGoldenFiles();
// Full paths of the *.json files in SharedDir()/<dir> (sorted); empty when it is absent.
std::vector<std::string> ListGoldenPaths(const std::string& dir);
// Path of the model a golden file was made from (in ../shared/models, or in the models/ folder
// beside the golden file's folder), or "" when it is not shipped.
std::string GoldenModelPath(const GoldenFile& g);
std::string HexToBytes(const std::string& hex);

// The *.json file names (no folder) in `dir`, a folder of the source tree such as
// tests/golden/embeddings; sorted.
std::vector<std::string> JsonFileNames(const std::string& dir);
// A golden file's name as a GoogleTest parameter name: without ".json", every character but
// letters and digits as '_'.
std::string GoldenParamName(const std::string& file_name);

}  // namespace sparrow::testing
