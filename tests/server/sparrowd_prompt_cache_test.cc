// The prompt cache on flash against the real sparrowd: a restarted process serves a prompt it
// saw before from --prompt-cache-dir (usage.prompt_tokens_details.cached_tokens) with the same
// answer; a damaged file, or one of another model (the q8_0 file of the same model: same
// tokenizer and shape, another digest) put where the model looks, is refused with a log line and
// the prompt computed, with the answer the model gives without a cache.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/util/sparrowd_process.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::SparrowdProcess;

constexpr int64_t kBlock = 16;  // sparrowd's default kv_block_size

const char* kPrompt =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park "
    "with her friends, and every day she ran to the big tree by the pond to look at the ducks.";

struct Answer {
  std::string text;
  int64_t prompt_tokens = -1, cached_tokens = -1;
};

class PromptCacheTest : public ::testing::Test {
 protected:
  std::unique_ptr<SparrowdProcess> Start(const std::string& model) {
    SparrowdProcess::Options o;
    o.args = {"--model", testing::ModelPath(model), "--port", "0", "--grpc-port", "-1", "--threads",
              "1",       "--prompt-cache-dir",      dir_};
    std::string error;
    auto p = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
    EXPECT_NE(p, nullptr) << error;
    return p;
  }

  static Answer Ask(const SparrowdProcess& p) {
    const json body = {{"prompt", kPrompt}, {"max_tokens", 24}, {"temperature", 0}};
    const auto [status, text] =
        testing::PostJsonHttp10(p.http_port(), "/v1/completions", body.dump());
    EXPECT_EQ(status, 200) << text;
    Answer a;
    const json r = json::parse(text, nullptr, false);
    if (r.is_discarded() || !r.contains("usage")) return a;
    a.text = r["choices"][0]["text"].get<std::string>();
    a.prompt_tokens = r["usage"]["prompt_tokens"].get<int64_t>();
    a.cached_tokens = r["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
    return a;
  }

  // SIGTERM, and the exit that writes what the cache still had queued.
  static void Stop(SparrowdProcess& p) {
    p.Signal(SIGTERM);
    EXPECT_EQ(p.Wait(std::chrono::seconds(30)), 0);
  }

  // The block files under dir_, by the model directory they are in.
  std::vector<fs::path> Files(const std::string& model_dir_prefix = "") const {
    std::vector<fs::path> out;
    for (const auto& sub : fs::directory_iterator(dir_)) {
      if (sub.path().filename().string().rfind(model_dir_prefix, 0) != 0) continue;
      for (const auto& f : fs::directory_iterator(sub.path())) out.push_back(f.path());
    }
    return out;
  }

  // The one model directory under dir_ not named `other`.
  fs::path ModelDir(const fs::path& other = {}) const {
    for (const auto& sub : fs::directory_iterator(dir_)) {
      if (sub.path() != other) return sub.path();
    }
    return {};
  }

  const std::string dir_ = testing::TempPath("prompt_cache");
};

TEST_F(PromptCacheTest, ARestartServesThePromptFromFlash) {
  auto first = Start("stories260K.gguf");
  ASSERT_NE(first, nullptr);
  const Answer computed = Ask(*first);
  ASSERT_GE(computed.prompt_tokens, 2 * kBlock) << "the prompt should span two KV blocks";
  EXPECT_EQ(computed.cached_tokens, 0);
  Stop(*first);
  const int64_t full_blocks = (computed.prompt_tokens + 24 - 1) / kBlock;
  EXPECT_GE(static_cast<int64_t>(Files().size()), (computed.prompt_tokens - 1) / kBlock);
  EXPECT_LE(static_cast<int64_t>(Files().size()), full_blocks);

  auto second = Start("stories260K.gguf");
  ASSERT_NE(second, nullptr);
  const Answer cached = Ask(*second);
  // Every full block but one holding the last token (always computed, for its logits).
  EXPECT_EQ(cached.cached_tokens, (computed.prompt_tokens - 1) / kBlock * kBlock);
  EXPECT_EQ(cached.text, computed.text);
  EXPECT_NE(second->Stdout().find("prompt cache: "), std::string::npos);
  EXPECT_EQ(second->Stdout().find("refused"), std::string::npos);
}

TEST_F(PromptCacheTest, ADamagedFileIsRefusedAndThePromptComputed) {
  auto first = Start("stories260K.gguf");
  ASSERT_NE(first, nullptr);
  const Answer computed = Ask(*first);
  Stop(*first);
  const std::vector<fs::path> files = Files();
  ASSERT_FALSE(files.empty());
  for (const fs::path& f : files) {  // one byte in the middle of each block changed
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    const auto at = static_cast<std::streamoff>(fs::file_size(f) / 2);
    io.seekg(at);
    const char c = static_cast<char>(io.get());
    io.seekp(at);
    io.put(static_cast<char>(c ^ 0x01));
  }

  auto second = Start("stories260K.gguf");
  ASSERT_NE(second, nullptr);
  const Answer again = Ask(*second);
  EXPECT_EQ(again.cached_tokens, 0);
  EXPECT_EQ(again.text, computed.text);
  const std::string log = second->Stdout();
  EXPECT_NE(log.find("prompt cache: refused"), std::string::npos) << log;
  EXPECT_NE(log.find("payload checksum mismatch"), std::string::npos) << log;
}

TEST_F(PromptCacheTest, AnotherModelsFileIsRefused) {
  // The f32 model's blocks, and the q8_0 model's own answer without them.
  auto f32 = Start("stories260K.gguf");
  ASSERT_NE(f32, nullptr);
  Ask(*f32);
  Stop(*f32);
  const fs::path f32_dir = ModelDir();
  auto q8 = Start("stories260K-q8_0.gguf");
  ASSERT_NE(q8, nullptr);
  const Answer own = Ask(*q8);
  EXPECT_EQ(own.cached_tokens, 0);
  Stop(*q8);
  const fs::path q8_dir = ModelDir(f32_dir);
  ASSERT_FALSE(q8_dir.empty());
  // The f32 model's files where the q8_0 model looks for its own.
  for (const auto& f : fs::directory_iterator(f32_dir)) {
    fs::copy_file(f.path(), q8_dir / f.path().filename(), fs::copy_options::overwrite_existing);
  }

  auto again = Start("stories260K-q8_0.gguf");
  ASSERT_NE(again, nullptr);
  const Answer a = Ask(*again);
  EXPECT_EQ(a.cached_tokens, 0);
  EXPECT_EQ(a.text, own.text);
  const std::string log = again->Stdout();
  EXPECT_NE(log.find("prompt cache: refused"), std::string::npos) << log;
  EXPECT_NE(log.find("written for model"), std::string::npos) << log;
}

}  // namespace
}  // namespace sparrow
