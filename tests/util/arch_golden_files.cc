#include "tests/util/arch_golden_files.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "engine/tools/quantize_command.h"
#include "tests/util/synthetic_arch.h"
#include "tests/util/test_paths.h"

namespace sparrow::testing {
namespace {

std::vector<std::string> Words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// "write_arch_model FAMILY FILE SEED": the synthetic_arch.h file, written to `path`.
std::string WriteSynthetic(const std::vector<std::string>& cmd, const std::string& path) {
  if (cmd.size() != 4 || cmd[0] != "write_arch_model") return "cannot read " + cmd[0] + "...";
  const auto family = ParseArchFamily(cmd[1]);
  if (!family) return "unknown family " + cmd[1];
  const Status s = WriteArchModel({*family, std::stoull(cmd[3])}, path);
  return s.ok() ? "" : s.ToString();
}

}  // namespace

std::vector<std::string> RepoArchGoldenPaths() {
  std::vector<std::string> out;
  const std::filesystem::path dir = std::filesystem::path(SPARROW_SOURCE_DIR) / "tests/golden/arch";
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string RegenerateArchModel(const nlohmann::json& g, const std::string& path) {
  const std::vector<std::string> cmd = Words(g.at("made_with").get<std::string>());
  if (cmd.size() == 8 && cmd[0] == "sparrow" && cmd[1] == "quantize") {
    // The source is a file of the shared folder, or a synthetic file made first.
    const std::string from = g.at("made_from").get<std::string>();
    std::string src = SharedDir() + "/" + from;
    if (from.rfind("write_arch_model ", 0) == 0) {
      src = path + ".f32.gguf";
      if (std::string e = WriteSynthetic(Words(from), src); !e.empty()) return e;
    } else if (!FileExists(src)) {
      return "skip: " + src + " is absent";
    }
    auto sum = tools::QuantizeModel({src, path, cmd[7]});
    if (src != SharedDir() + "/" + from) std::remove(src.c_str());
    return sum.ok() ? "" : sum.status().ToString();
  }
  if (cmd.size() == 4 && cmd[0] == "write_arch_model") return WriteSynthetic(cmd, path);
  return "cannot read made_with: " + g.at("made_with").get<std::string>();
}

}  // namespace sparrow::testing
