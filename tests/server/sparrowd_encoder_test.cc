// Encoder models (bert, nomic-bert) and a decoder embedding model (qwen3) in the real sparrowd
// on loopback: /v1/embeddings and gRPC Embed equal llama.cpp's llama-embedding (the goldens of
// tests/golden/embeddings) within 1e-4 per component, for every pooling of the golden, texts
// batched in one request; generations are refused with 400 naming the model as an embedding model.
// A BERT cross-encoder (bge- reranker's head) scores pairs as llama-server's /v1/rerank does
// (tests/golden/rerank/ bertrerank.json), over HTTP and gRPC Rerank. The models are
// synthetic_arch.h's.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "sparrow/v1/sparrow.grpc.pb.h"
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

double WorstDifference(const std::vector<double>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  if (got.size() != want.size()) return INFINITY;
  double worst = 0;
  for (size_t k = 0; k < got.size(); ++k) worst = std::max(worst, std::fabs(got[k] - want[k]));
  return worst;
}

std::unique_ptr<v1::Sparrow::Stub> GrpcStub(const SparrowdProcess& p) {
  return v1::Sparrow::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(p.grpc_port()),
                                                  grpc::InsecureChannelCredentials()));
}

struct Served {
  std::string path;
  std::unique_ptr<SparrowdProcess> server;
};

// sparrowd serving the golden's model: a synthetic one (written to a temporary file) or a file
// of ../shared ("model"), with the golden's KV cache type.
Served Serve(const json& golden) {
  Served s;
  if (golden.contains("synthetic")) {
    const std::string name = golden.at("synthetic").at("family").get<std::string>();
    const auto family = testing::ParseArchFamily(name);
    EXPECT_TRUE(family.has_value()) << name;
    if (!family) return s;
    s.path = testing::TempPath(name + ".gguf");
    const Status st = testing::WriteArchModel(
        {*family, golden.at("synthetic").at("seed").get<uint64_t>()}, s.path);
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (!st.ok()) return s;
  } else {
    s.path = testing::SharedDir() + "/" + golden.at("model").get<std::string>();
  }
  const std::string kv = golden.value("cache_type", "f32");
  SparrowdProcess::Options o;
  o.args = {"--model",        s.path,
            "--port",         "0",
            "--grpc-port",    "0",
            "--threads",      "1",
            "--cache-type-k", kv,
            "--cache-type-v", kv,
            "--n-ctx",        std::to_string(golden.at("n_ctx").get<int64_t>())};
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
      EXPECT_LE(WorstDifference(r["data"][i].at("embedding").get<std::vector<double>>(),
                                cases[i]->at("embedding").get<std::vector<double>>()),
                kTolerance);
    }
  }
}

// The same over gRPC Embed: one request per pooling.
void ExpectGoldenEmbeddingsOverGrpc(const SparrowdProcess& p, const json& golden) {
  auto stub = GrpcStub(p);
  std::map<std::string, std::vector<const json*>> by_pooling;
  for (const json& c : golden.at("cases")) by_pooling[c.at("pooling")].push_back(&c);
  for (const auto& [pooling, cases] : by_pooling) {
    v1::EmbedRequest req;
    for (const json* c : cases) req.add_texts(c->at("text").get<std::string>());
    req.set_pooling(pooling);
    v1::EmbedResponse res;
    grpc::ClientContext ctx;
    const grpc::Status st = stub->Embed(&ctx, req, &res);
    ASSERT_TRUE(st.ok()) << pooling << ": " << st.error_message();
    EXPECT_EQ(res.pooling(), pooling);
    ASSERT_EQ(res.embeddings_size(), static_cast<int>(cases.size()));
    for (size_t i = 0; i < cases.size(); ++i) {
      SCOPED_TRACE("gRPC " + pooling + " '" + cases[i]->at("text").get<std::string>() + "'");
      const auto& values = res.embeddings(static_cast<int>(i)).values();
      EXPECT_LE(WorstDifference(std::vector<double>(values.begin(), values.end()),
                                cases[i]->at("embedding").get<std::vector<double>>()),
                kTolerance);
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
  ExpectGoldenEmbeddingsOverGrpc(*s.server, golden);
  ExpectGenerationsRefused(s.server->http_port());
}

INSTANTIATE_TEST_SUITE_P(Families, SparrowdEncoderTest,
                         ::testing::Values("synth-bert-f32.json", "synth-nomic-bert-f32.json"),
                         [](const auto& info) { return testing::GoldenParamName(info.param); });

// A decoder as an embedding model (Qwen3-Embedding's layout: qwen3 with last-token pooling, and
// mean and cls as --pooling or the request's "pooling" give them), over HTTP and gRPC.
TEST(SparrowdDecoderEmbeddingTest, Qwen3MatchesLlamaCppOverHttpAndGrpc) {
  const json golden = Golden("synth-qwen3-f32.json");
  if (!testing::FileExists(testing::SharedDir() + "/" + golden.at("model").get<std::string>())) {
    GTEST_SKIP() << golden.at("model") << " is not in " << testing::SharedDir();
  }
  Served s = Serve(golden);
  ASSERT_NE(s.server, nullptr);
  ExpectGoldenEmbeddings(s.server->http_port(), golden);
  ExpectGoldenEmbeddingsOverGrpc(*s.server, golden);
}

TEST(SparrowdBertRerankTest, ScoresEqualLlamaServerOverHttpAndGrpc) {
  if (!testing::FileExists(testing::ModelPath("vocab/ggml-vocab-bert-bge.gguf"))) GTEST_SKIP();
  const json golden = json::parse(
      testing::ReadFileOrDie(std::string(SPARROW_RERANK_GOLDEN_DIR) + "/bertrerank.json"));
  const std::string path = testing::TempPath("sparrowd-bertrerank.gguf");
  ASSERT_TRUE(testing::WriteArchModel({testing::ArchFamily::kBertRerank, 1}, path).ok());
  SparrowdProcess::Options o;
  o.args = {"--model",     path,
            "--port",      "0",
            "--grpc-port", "0",
            "--threads",   "1",
            "--n-ctx",     std::to_string(golden.at("n_ctx").get<int64_t>())};
  std::string error;
  auto p = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  ASSERT_NE(p, nullptr) << error;
  // The golden's queries, each with its documents as one request.
  std::map<std::string, std::vector<const json*>> by_query;
  for (const json& c : golden.at("cases")) by_query[c.at("query")].push_back(&c);
  const double tolerance = golden.value("tolerance", kTolerance);
  auto stub = GrpcStub(*p);
  for (const auto& [query, cases] : by_query) {
    SCOPED_TRACE(query);
    json documents = json::array();
    v1::RerankRequest req;
    req.set_query(query);
    for (const json* c : cases) {
      documents.push_back(c->at("document"));
      req.add_documents(c->at("document").get<std::string>());
    }
    const auto [status, body] = testing::PostJsonHttp10(
        p->http_port(), "/v1/rerank", json{{"query", query}, {"documents", documents}}.dump());
    ASSERT_EQ(status, 200) << body;
    const json r = json::parse(body);
    ASSERT_EQ(r.at("results").size(), cases.size());
    v1::RerankResponse res;
    grpc::ClientContext ctx;
    const grpc::Status st = stub->Rerank(&ctx, req, &res);
    ASSERT_TRUE(st.ok()) << st.error_message();
    ASSERT_EQ(res.results_size(), static_cast<int>(cases.size()));
    for (size_t i = 0; i < cases.size(); ++i) {
      const size_t index = r["results"][i].at("index").get<size_t>();
      ASSERT_LT(index, cases.size());
      const double want = cases[index]->at("scores")[0].get<double>();
      EXPECT_NEAR(r["results"][i].at("relevance_score").get<double>(), want, tolerance)
          << "HTTP, document " << index;
      ASSERT_LT(res.results(static_cast<int>(i)).index(), cases.size());
      EXPECT_NEAR(res.results(static_cast<int>(i)).relevance_score(),
                  cases[res.results(static_cast<int>(i)).index()]->at("scores")[0].get<double>(),
                  tolerance)
          << "gRPC, document " << res.results(static_cast<int>(i)).index();
      if (i > 0) {  // best first
        EXPECT_GE(r["results"][i - 1]["relevance_score"].get<double>(),
                  r["results"][i]["relevance_score"].get<double>());
        EXPECT_GE(res.results(static_cast<int>(i) - 1).relevance_score(),
                  res.results(static_cast<int>(i)).relevance_score());
      }
    }
  }
}

}  // namespace
}  // namespace sparrow
