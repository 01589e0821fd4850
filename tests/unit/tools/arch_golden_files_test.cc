// The model files behind tests/golden/arch/*.json are not in the repository. This regenerates
// each one as its "made_with" says (sparrow quantize, or the synthetic_arch.h writer) and checks
// that it is byte for byte the file llama.cpp ran ("model_sha256"): a change to the quantizers
// or the writer that alters those files must come with new goldens.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "engine/tools/quantize_command.h"
#include "tests/util/sha256.h"
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

// Writes the model a golden describes to `path`; "" on success, else why not.
std::string Regenerate(const nlohmann::json& g, const std::string& path) {
  const std::vector<std::string> cmd = Words(g.at("made_with").get<std::string>());
  if (cmd.size() == 8 && cmd[0] == "sparrow" && cmd[1] == "quantize") {
    const std::string src = SharedDir() + "/" + g.at("made_from").get<std::string>();
    if (!FileExists(src)) return "skip: " + src + " is absent";
    auto sum = tools::QuantizeModel({src, path, cmd[7]});
    return sum.ok() ? "" : sum.status().ToString();
  }
  if (cmd.size() == 4 && cmd[0] == "write_arch_model") {
    const auto family = ParseArchFamily(cmd[1]);
    if (!family) return "unknown family " + cmd[1];
    const Status s = WriteArchModel({*family, std::stoull(cmd[3])}, path);
    return s.ok() ? "" : s.ToString();
  }
  return "cannot read made_with: " + g.at("made_with").get<std::string>();
}

TEST(ArchGoldenFiles, RegeneratedFilesAreTheOnesLlamaCppRan) {
  const std::filesystem::path dir = std::filesystem::path(SPARROW_SOURCE_DIR) / "tests/golden/arch";
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    const nlohmann::json g = nlohmann::json::parse(ReadFileOrDie(entry.path().string()));
    const std::string out = TempPath(g.at("model_file").get<std::string>());
    const std::string error = Regenerate(g, out);
    if (error.rfind("skip: ", 0) == 0) continue;
    ASSERT_EQ(error, "") << entry.path();
    const std::string bytes = ReadFileOrDie(out);
    std::remove(out.c_str());
    EXPECT_EQ(bytes.size(), g.at("model_size_bytes").get<size_t>()) << entry.path();
    EXPECT_EQ(Sha256Hex(bytes), g.at("model_sha256").get<std::string>()) << entry.path();
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the length no longer fits the first padding block.
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

}  // namespace
}  // namespace sparrow::testing
