// POST /v1/rerank against the real sparrowd on a loopback port: the synthetic Qwen3 reranker's
// scores equal llama.cpp's (tests/golden/rerank/qwen3rerank.json) over HTTP, sorted best first,
// top_n and return_documents, llama-server's aliases; the refusals, each a 400 naming the field;
// and a model without a classification head (stories260K) refused as such.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/util/sparrowd_process.h"
#include "tests/util/synthetic_arch.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using json = nlohmann::json;
using testing::SparrowdProcess;

std::unique_ptr<SparrowdProcess> Start(const std::string& model) {
  SparrowdProcess::Options o;
  o.args = {"--model",   model, "--port",         "0",   "--grpc-port",    "-1",
            "--threads", "1",   "--cache-type-k", "f32", "--cache-type-v", "f32"};
  std::string error;
  auto p = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  EXPECT_NE(p, nullptr) << error;
  return p;
}

struct Answer {
  int status = 0;
  json body;
};

Answer Post(const SparrowdProcess& p, const std::string& path, const json& body) {
  auto [status, text] = testing::PostJsonHttp10(p.http_port(), path, body.dump());
  Answer a{status, json::parse(text, nullptr, false)};
  return a;
}

std::string ErrorParam(const Answer& a) {
  return a.body.contains("error") ? a.body["error"].value("param", "") : "(no error)";
}

class SparrowdRerankTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!testing::FileExists(testing::ModelPath("stories260K.gguf"))) return;
    const std::string path = testing::TempPath("sparrowd-rerank-qwen3rerank.gguf");
    ASSERT_TRUE(testing::WriteArchModel({testing::ArchFamily::kQwen3Rerank, 1}, path).ok());
    model_id_ = std::filesystem::path(path).stem().string();
    server_ = Start(path).release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (server_ == nullptr) GTEST_SKIP() << "stories260K.gguf (the tokenizer) is missing";
  }
  static SparrowdProcess* server_;
  static std::string model_id_;  // the file's name without .gguf
};
SparrowdProcess* SparrowdRerankTest::server_ = nullptr;
std::string SparrowdRerankTest::model_id_;

TEST_F(SparrowdRerankTest, ScoresEqualLlamaCppSortedBestFirst) {
  const json g = json::parse(
      testing::ReadFileOrDie(std::string(SPARROW_RERANK_GOLDEN_DIR) + "/qwen3rerank.json"));
  // The golden's first query and its documents, as one request.
  const std::string query = g["cases"][0]["query"];
  std::vector<std::string> docs;
  std::vector<float> want;
  for (const auto& c : g["cases"]) {
    if (c["query"] != query) continue;
    docs.push_back(c["document"]);
    want.push_back(c["scores"][0]);
  }
  ASSERT_GE(docs.size(), 3u);
  const Answer a = Post(*server_, "/v1/rerank", {{"query", query}, {"documents", docs}});
  ASSERT_EQ(a.status, 200) << a.body.dump();
  EXPECT_EQ(a.body["object"], "list");
  EXPECT_EQ(a.body["model"], model_id_);
  EXPECT_GT(a.body["usage"]["prompt_tokens"].get<int64_t>(), 0);
  EXPECT_EQ(a.body["usage"]["total_tokens"], a.body["usage"]["prompt_tokens"]);
  const json& results = a.body["results"];
  ASSERT_EQ(results.size(), docs.size());
  std::vector<bool> seen(docs.size(), false);
  for (size_t i = 0; i < results.size(); ++i) {
    const size_t index = results[i]["index"];
    ASSERT_LT(index, docs.size());
    seen[index] = true;
    EXPECT_NEAR(results[i]["relevance_score"].get<double>(), want[index], 1e-4) << index;
    EXPECT_FALSE(results[i].contains("document"));
    if (i > 0) {
      EXPECT_GE(results[i - 1]["relevance_score"].get<double>(),
                results[i]["relevance_score"].get<double>());
    }
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), true), static_cast<long>(docs.size()));

  // top_n and return_documents, on llama-server's other names for the route.
  for (const char* path : {"/rerank", "/v1/reranking", "/reranking"}) {
    const Answer top =
        Post(*server_, path,
             {{"query", query}, {"documents", docs}, {"top_n", 2}, {"return_documents", true}});
    ASSERT_EQ(top.status, 200) << path << " " << top.body.dump();
    ASSERT_EQ(top.body["results"].size(), 2u) << path;
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(top.body["results"][i]["index"], results[i]["index"]) << path;
      EXPECT_EQ(top.body["results"][i]["document"]["text"], docs[results[i]["index"].get<size_t>()])
          << path;
    }
  }
}

TEST_F(SparrowdRerankTest, BadRequestsAre400NamingTheField) {
  const json docs = {"a small dog", "the sea"};
  struct Case {
    json body;
    std::string param;
  };
  std::vector<std::string> too_many(1001, "x");
  const std::string long_doc(4000, 'z');  // beyond the 512-token context once tokenized
  const Case cases[] = {
      {{{"documents", docs}}, "query"},
      {{{"query", 1}, {"documents", docs}}, "query"},
      {{{"query", "q"}}, "documents"},
      {{{"query", "q"}, {"documents", json::array()}}, "documents"},
      {{{"query", "q"}, {"documents", {"ok", 3}}}, "documents"},
      {{{"query", "q"}, {"documents", docs}, {"top_n", 0}}, "top_n"},
      {{{"query", "q"}, {"documents", docs}, {"top_n", "2"}}, "top_n"},
      {{{"query", "q"}, {"documents", docs}, {"return_documents", 1}}, "return_documents"},
      {{{"query", "q"}, {"documents", too_many}}, "documents"},
      {{{"query", "q"}, {"documents", {"fine", long_doc}}}, "documents"},
      {{{"model", "no-such-model"}, {"query", "q"}, {"documents", docs}}, "model"},
  };
  for (const Case& c : cases) {
    const Answer a = Post(*server_, "/v1/rerank", c.body);
    SCOPED_TRACE(c.body.dump().substr(0, 200));
    EXPECT_TRUE(a.status == 400 || a.status == 404) << a.status;
    EXPECT_EQ(ErrorParam(a), c.param) << a.body.dump().substr(0, 300);
  }
  const Answer tokens =
      Post(*server_, "/v1/rerank", {{"query", "q"}, {"documents", {"fine", long_doc}}});
  EXPECT_EQ(tokens.body["error"]["code"], "context_length_exceeded");
  EXPECT_NE(tokens.body["error"]["message"].get<std::string>().find("documents[1]"),
            std::string::npos);
  // The reranker's pooling is rank: its embeddings endpoint says where to go instead.
  const Answer embed = Post(*server_, "/v1/embeddings", {{"input", "a small dog"}});
  EXPECT_EQ(embed.status, 400);
  EXPECT_NE(embed.body.dump().find("rerank"), std::string::npos) << embed.body.dump();
  // Still serving.
  EXPECT_EQ(Post(*server_, "/v1/rerank", {{"query", "q"}, {"documents", docs}}).status, 200);
}

TEST(SparrowdRerankNoHeadTest, ModelWithoutClassificationHeadIsRefused) {
  const std::string model = testing::ModelPath("stories260K.gguf");
  if (!testing::FileExists(model)) GTEST_SKIP() << model << " is missing";
  auto p = Start(model);
  ASSERT_NE(p, nullptr);
  const Answer a = Post(*p, "/v1/rerank", {{"query", "Once"}, {"documents", {"upon a time"}}});
  EXPECT_EQ(a.status, 400);
  EXPECT_EQ(a.body["error"]["code"], "model_not_reranker");
  EXPECT_NE(a.body["error"]["message"].get<std::string>().find("classification head"),
            std::string::npos);
}

}  // namespace
}  // namespace sparrow
