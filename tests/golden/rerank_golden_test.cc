// Rerank scores against llama.cpp's llama-embedding --pooling rank or llama-server's /v1/rerank
// (tests/golden/rerank/*.json, made as its README says): the synthetic reranker of each file
// written again here (the same bytes: synthetic_arch.h), every (query, document) pair written as
// sparrowd writes it (RerankFormat: the GGUF's rerank template or the plain pair), scored
// through the scheduler as sparrowd runs it (submitted together, so batched), each score within
// 1e-4.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "engine/sched/scheduler.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/core/rerank_format.h"
#include "tests/util/collecting_sink.h"
#include "tests/util/golden.h"
#include "tests/util/synthetic_arch.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

// Per score: the bound, or the file's "tolerance" (README.md there says why one has
// its own).
constexpr double kTolerance = 1e-4;

class RerankGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RerankGoldenTest, MatchesLlamaCpp) {
  const auto g = nlohmann::json::parse(
      testing::ReadFileOrDie(std::string(SPARROW_RERANK_GOLDEN_DIR) + "/" + GetParam()));
  if (!testing::FileExists(testing::ModelPath("stories260K.gguf"))) GTEST_SKIP();
  const double tolerance = g.value("tolerance", kTolerance);
  const auto family = testing::ParseArchFamily(g.at("family").get<std::string>());
  ASSERT_TRUE(family.has_value()) << g.at("family");
  const std::string path = testing::TempPath(GetParam() + ".gguf");
  ASSERT_TRUE(testing::WriteArchModel({*family, g.at("seed").get<uint64_t>()}, path).ok());
  auto m = Model::Load(path);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto tok = LoadTokenizer((*m)->file());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const server::RerankFormat format = server::RerankFormat::FromFile((*m)->file());
  SchedulerOptions o;
  o.n_ctx = g.at("n_ctx").get<int64_t>();
  o.kv_types = {TensorType::kF32, TensorType::kF32};  // the reference's -ctk/-ctv f32
  o.is_eog = [&](int32_t id) { return (*tok)->IsEog(id); };
  Scheduler sched(**m, nullptr, o);
  std::vector<std::shared_ptr<testing::CollectingSink>> sinks;
  for (const auto& c : g.at("cases")) {
    GenerationRequest r;
    r.prompt = format.Tokenize(**tok, c.at("query").get<std::string>(),
                               c.at("document").get<std::string>());
    r.embedding = PoolingType::kRank;
    sinks.push_back(std::make_shared<testing::CollectingSink>());
    r.sink = sinks.back();
    ASSERT_TRUE(sched.Submit(std::move(r)).ok());
  }
  size_t i = 0;
  double file_worst = 0;
  for (const auto& c : g.at("cases")) {
    SCOPED_TRACE("'" + c.at("query").get<std::string>() + "' / '" +
                 c.at("document").get<std::string>() + "'");
    const std::vector<float> got = sinks[i++]->WaitEmbedding();
    const std::vector<float> want = c.at("scores").get<std::vector<float>>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      EXPECT_NEAR(got[k], want[k], tolerance) << "score " << k;
      file_worst = std::max(file_worst, std::fabs(double(got[k]) - want[k]));
    }
  }
  std::printf("%s: %zu pairs, max |difference| %.3g\n", GetParam().c_str(), i, file_worst);
}

INSTANTIATE_TEST_SUITE_P(Files, RerankGoldenTest,
                         ::testing::ValuesIn(testing::JsonFileNames(SPARROW_RERANK_GOLDEN_DIR)),
                         [](const auto& info) { return testing::GoldenParamName(info.param); });

}  // namespace
}  // namespace sparrow
