// The model files behind tests/golden/arch/*.json are not in the repository. This regenerates
// each one as its "made_with" says (sparrow quantize, or the synthetic_arch.h writer) and checks
// that it is byte for byte the file llama.cpp ran ("model_sha256"): a change to the quantizers
// or the writer that alters those files must come with new goldens.
#include "tests/util/arch_golden_files.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/util/sha256.h"
#include "tests/util/test_paths.h"

namespace sparrow::testing {
namespace {

TEST(ArchGoldenFiles, RegeneratedFilesAreTheOnesLlamaCppRan) {
  int checked = 0;
  for (const std::string& json : RepoArchGoldenPaths()) {
    const nlohmann::json g = nlohmann::json::parse(ReadFileOrDie(json));
    const std::string out = TempPath(g.at("model_file").get<std::string>());
    const std::string error = RegenerateArchModel(g, out);
    if (error.rfind("skip: ", 0) == 0) continue;
    ASSERT_EQ(error, "") << json;
    const std::string bytes = ReadFileOrDie(out);
    std::remove(out.c_str());
    EXPECT_EQ(bytes.size(), g.at("model_size_bytes").get<size_t>()) << json;
    EXPECT_EQ(Sha256Hex(bytes), g.at("model_sha256").get<std::string>()) << json;
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
