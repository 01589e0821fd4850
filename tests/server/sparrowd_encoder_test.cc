// Encoder models (bert, nomic-bert) in the real sparrowd on loopback: /v1/embeddings equals
// llama.cpp's llama-embedding (the goldens of tests/golden/embeddings) within 1e-4 per
// component, for every pooling of the golden, texts batched in one request; generations are
// refused with 400 naming the model as an embedding model. The models are synthetic_arch.h's.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "tests/util/golden.h"
#include "tests/util/sparrowd_process.h"
#include "tests/util/synthetic_arch.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using json = nlohmann::json;
using testing::SparrowdProcess;

constexpr double kTolerance = 1e-4;

json Golden(const std::string& name) {
  return json::parse(
      testing::ReadFileOrDie(std::string(SPARROW_EMBEDDING_GOLDEN_DIR) + "/" + name));
}

struct Served {
  std::string path;
  std::unique_ptr<SparrowdProcess> server;
};

// sparrowd serving the golden's synthetic model (written to a temporary file).
Served Serve(const json& golden) {
  Served s;
  const auto family =
      testing::ParseArchFamily(golden.at("synthetic").at("family").get<std::string>());
  EXPECT_TRUE(family.has_value());
  if (!family) return s;
  s.path = testing::TempPath(golden.at("synthetic").at("family").get<std::string>() + ".gguf");
  const Status st =
      testing::WriteArchModel({*family, golden.at("synthetic").at("seed").get<uint64_t>()}, s.path);
  EXPECT_TRUE(st.ok()) << st.ToString();
  if (!st.ok()) return s;
  SparrowdProcess::Options o;
  o.args = {"--model",     s.path,
            "--port",      "0",
            "--grpc-port", "-1",
            "--threads",   "1",
            "--n-ctx",     std::to_string(golden.at("n_ctx").get<int64_t>())};
  std::string error;
  s.server = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  EXPECT_NE(s.server, nullptr) << error;
  return s;
}

// Every pooling of the golden: one request with all its texts, each vector within the bound.
void ExpectGoldenEmbeddings(int port, const json& golden) {
  std::map<std::string, std::vector<const json*>> by_pooling;
  for (const json& c : golden.at("cases")) by_pooling[c.at("pooling")].push_back(&c);
  for (const auto& [pooling, cases] : by_pooling) {
    json input = json::array();
    for (const json* c : cases) input.push_back(c->at("text"));
    const auto [status, body] = testing::PostJsonHttp10(
        port, "/v1/embeddings", json{{"input", input}, {"pooling", pooling}}.dump());
    ASSERT_EQ(status, 200) << body;
    const json r = json::parse(body);
    ASSERT_EQ(r.at("data").size(), cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
      SCOPED_TRACE(pooling + " '" + cases[i]->at("text").get<std::string>() + "'");
      const auto got = r["data"][i].at("embedding").get<std::vector<double>>();
      const auto want = cases[i]->at("embedding").get<std::vector<double>>();
      ASSERT_EQ(got.size(), want.size());
      double worst = 0;
      for (size_t k = 0; k < got.size(); ++k) worst = std::max(worst, std::fabs(got[k] - want[k]));
      EXPECT_LE(worst, kTolerance);
    }
  }
}

void ExpectGenerationsRefused(int port) {
  const auto [chat, chat_body] = testing::PostJsonHttp10(
      port, "/v1/chat/completions",
      json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 4}}.dump());
  EXPECT_EQ(chat, 400) << chat_body;
  EXPECT_NE(chat_body.find("is an embedding model"), std::string::npos) << chat_body;
  const auto [text, text_body] = testing::PostJsonHttp10(
      port, "/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 4}}.dump());
  EXPECT_EQ(text, 400) << text_body;
  EXPECT_NE(text_body.find("is an embedding model"), std::string::npos) << text_body;
}

class SparrowdEncoderTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SparrowdEncoderTest, EmbeddingsMatchLlamaCppAndGenerationsAreRefused) {
  if (!testing::FileExists(testing::ModelPath("vocab/ggml-vocab-bert-bge.gguf"))) GTEST_SKIP();
  const json golden = Golden(GetParam());
  Served s = Serve(golden);
  ASSERT_NE(s.server, nullptr);
  ExpectGoldenEmbeddings(s.server->http_port(), golden);
  ExpectGenerationsRefused(s.server->http_port());
}

INSTANTIATE_TEST_SUITE_P(Families, SparrowdEncoderTest,
                         ::testing::Values("synth-bert-f32.json", "synth-nomic-bert-f32.json"),
                         [](const auto& info) { return testing::GoldenParamName(info.param); });

}  // namespace
}  // namespace sparrow
