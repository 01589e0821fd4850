// A model file whose chat template is a memory bomb (issue 41, "Reliability and security, third
// pass"): a real sparrowd on loopback serving a GGUF written with that template. Before the byte
// budget the first chat request took it to 19 GiB; now the render stops at its limit before it
// allocates, the warning names the template and the limit, and the request is answered with the
// built-in template.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "tests/util/sparrowd_process.h"
#include "tests/util/synthetic_llama.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using json = nlohmann::json;
using testing::SparrowdProcess;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr const char* kBomb =
    "{% set s = 'x' * 60000000 %}{% set l = [s] * 1000000 %}{{ l | length }}";

// stories260K's vocabulary and shapes with random weights, and `chat_template` as its
// tokenizer.chat_template; the file's path.
std::string WriteModel(const std::string& chat_template) {
  testing::LlamaModelSpec spec;
  spec.vocab = testing::LlamaModelSpec::Vocab::kStories260K;
  Result<testing::GgufWriter> w = testing::MakeLlamaModel(spec);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  if (!w.ok()) return "";
  w->AddString("tokenizer.chat_template", chat_template);
  const std::string path = testing::TempPath("template-bomb.gguf");
  Status st = w->WriteFile(path);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return path;
}

std::pair<int, json> Chat(const SparrowdProcess& s) {
  auto [status, body] = testing::PostJsonHttp10(
      s.http_port(), "/v1/chat/completions",
      json{{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 2}}.dump());
  return {status, json::parse(body, nullptr, false)};
}

TEST(SparrowdTemplateBombTest, TheBombIsStoppedAtItsLimitAndTheChatAnswered) {
  const std::string model = WriteModel(kBomb);
  ASSERT_FALSE(model.empty());
  SparrowdProcess::Options o;
  o.args = {"--model", model, "--port", "0", "--threads", "1", "--grpc-port", "-1"};
  // Without a bound the bomb fails its allocations here instead of taking the machine's memory.
  o.max_address_space = static_cast<rlim_t>(2048 * kMiB);
  std::string error;
  auto s = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  ASSERT_NE(s, nullptr) << error;
  const int64_t before = s->PeakResidentBytes();
  ASSERT_GT(before, 0);

  auto [status, body] = Chat(*s);
  ASSERT_EQ(status, 200) << body.dump() << "\n" << s->Stdout() << s->Stderr();
  EXPECT_EQ(body.value("object", ""), "chat.completion") << body.dump();
  const int64_t after = s->PeakResidentBytes();
  ASSERT_GT(after, 0) << "sparrowd is gone:\n" << s->Stderr();
  // The figure issue 41 asks for, in the test's output.
  std::printf("sparrowd VmHWM before the bomb %lld MiB, after %lld MiB\n",
              static_cast<long long>(before / kMiB), static_cast<long long>(after / kMiB));
  // The interpreter's bound (RenderLimits: 64 MiB held, plus one operation's code points).
  EXPECT_LT(after - before, 160 * kMiB)
      << "VmHWM " << before / kMiB << " -> " << after / kMiB << " MiB";
  const std::string log = s->Stdout();
  EXPECT_NE(log.find("tokenizer.chat_template of '" + model + "' failed"), std::string::npos)
      << log;
  EXPECT_NE(log.find("(the output limit)"), std::string::npos) << log;
  // And it keeps serving.
  EXPECT_EQ(Chat(*s).first, 200);
}

}  // namespace
}  // namespace sparrow
