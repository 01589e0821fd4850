#include "tests/util/golden.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/util/test_paths.h"

namespace sparrow::testing {

std::string HexToBytes(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

GoldenFile LoadGolden(const std::string& json_path) {
  auto j = nlohmann::json::parse(ReadFileOrDie(json_path));
  GoldenFile g;
  g.json_path = json_path;
  g.model_file = j.at("model_file");
  g.architecture = j.at("architecture");
  g.reference = j.value("llama_cpp_commit", "");
  g.n_vocab = j.at("n_vocab");
  for (const auto& p : j.at("prompts")) {
    GoldenPrompt gp;
    gp.prompt = p.at("prompt");
    gp.add_bos = p.at("add_bos");
    gp.prompt_tokens = p.at("prompt_tokens").get<std::vector<int32_t>>();
    gp.generated_tokens = p.at("generated_tokens").get<std::vector<int32_t>>();
    gp.margins = p.at("top1_minus_top2").get<std::vector<float>>();
    gp.reliable_prefix_len = p.at("reliable_prefix_len");
    gp.generated_text_bytes = HexToBytes(p.at("generated_text_hex"));
    for (const auto& t : p.at("topk")) {
      GoldenTopK k;
      k.step = t.at("step");
      k.n_past = t.at("n_past");
      k.ids = t.at("ids").get<std::vector<int32_t>>();
      k.logits = t.at("logits").get<std::vector<float>>();
      gp.topk.push_back(std::move(k));
    }
    if (p.contains("last_prompt_logits"))
      gp.last_prompt_logits = p.at("last_prompt_logits").get<std::vector<float>>();
    g.prompts.push_back(std::move(gp));
  }
  return g;
}

std::vector<std::string> ListGoldenFiles() {
  std::vector<std::string> out;
  const std::string dir = TestdataPath("golden");
  if (!FileExists(dir)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".json") out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> ListGoldenPaths(const std::string& dir) {
  std::vector<std::string> out;
  const std::string full = SharedDir() + "/" + dir;
  if (!FileExists(full)) return out;
  for (const auto& e : std::filesystem::directory_iterator(full)) {
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string GoldenModelPath(const GoldenFile& g) {
  // stories260K-f32.gguf was a re-saved copy of stories260K.gguf (same F32 weights, other
  // metadata); only the original is shipped.
  std::string name = g.model_file == "stories260K-f32.gguf" ? "stories260K.gguf" : g.model_file;
  const auto beside =
      std::filesystem::path(g.json_path).parent_path().parent_path() / "models" / name;
  for (const std::string& p : {ModelPath(name), ModelPath("synthetic/" + name), beside.string()}) {
    if (FileExists(p)) return p;
  }
  return "";
}

std::vector<std::string> JsonFileNames(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".json") out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string GoldenParamName(const std::string& file_name) {
  std::string n =
      file_name.ends_with(".json") ? file_name.substr(0, file_name.size() - 5) : file_name;
  for (char& ch : n) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return n;
}

}  // namespace sparrow::testing
