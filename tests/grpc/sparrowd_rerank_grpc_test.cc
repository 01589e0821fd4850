// gRPC Rerank against the real sparrowd serving the synthetic Qwen3 reranker: the same scores
// and order as llama.cpp's (tests/golden/rerank/qwen3rerank.json), top_n and documents, and
// INVALID_ARGUMENT naming the field for a bad request.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "sparrow/v1/sparrow.grpc.pb.h"
#include "tests/util/sparrowd_process.h"
#include "tests/util/synthetic_arch.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using testing::SparrowdProcess;

TEST(SparrowdRerankGrpcTest, ScoresMatchTheGoldenBestFirst) {
  if (!testing::FileExists(testing::ModelPath("stories260K.gguf"))) GTEST_SKIP();
  const std::string path = testing::TempPath("grpc-rerank-qwen3rerank.gguf");
  ASSERT_TRUE(testing::WriteArchModel({testing::ArchFamily::kQwen3Rerank, 1}, path).ok());
  SparrowdProcess::Options o;
  o.args = {"--model",   path, "--port",         "0",   "--grpc-port",    "0",
            "--threads", "1",  "--cache-type-k", "f32", "--cache-type-v", "f32"};
  std::string error;
  auto p = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  ASSERT_NE(p, nullptr) << error;
  auto stub = v1::Sparrow::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(p->grpc_port()), grpc::InsecureChannelCredentials()));

  const auto g = nlohmann::json::parse(
      testing::ReadFileOrDie(std::string(SPARROW_RERANK_GOLDEN_DIR) + "/qwen3rerank.json"));
  const std::string query = g["cases"][0]["query"];
  v1::RerankRequest req;
  req.set_query(query);
  std::vector<float> want;
  for (const auto& c : g["cases"]) {
    if (c["query"] != query) continue;
    req.add_documents(c["document"].get<std::string>());
    want.push_back(c["scores"][0]);
  }
  req.set_top_n(2);
  req.set_return_documents(true);
  v1::RerankResponse res;
  grpc::ClientContext ctx;
  const grpc::Status st = stub->Rerank(&ctx, req, &res);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(res.model(), std::filesystem::path(path).stem().string());
  EXPECT_GT(res.prompt_tokens(), 0);
  ASSERT_EQ(res.results_size(), 2);
  // The best two of the golden's scores, in order.
  std::vector<size_t> order(want.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return want[a] > want[b]; });
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(res.results(i).index(), order[i]);
    EXPECT_NEAR(res.results(i).relevance_score(), want[order[i]], 1e-4);
    EXPECT_EQ(res.results(i).document(), req.documents(static_cast<int>(order[i])));
  }

  v1::RerankRequest bad;
  bad.set_query(query);
  grpc::ClientContext bad_ctx;
  const grpc::Status refused = stub->Rerank(&bad_ctx, bad, &res);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(refused.error_message().find("documents"), std::string::npos)
      << refused.error_message();
}

}  // namespace
}  // namespace sparrow
