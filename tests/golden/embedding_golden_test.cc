// Embeddings against llama.cpp's llama-embedding (tests/golden/embeddings/*.json, made as its
// README says): every case's text, through the scheduler as sparrowd runs it (the reference's KV
// cache type), pooled as the case says and L2-normalised, within 1e-4 per component. A file
// with "synthetic" names a synthetic_arch.h model, written here to a temporary file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "engine/sched/scheduler.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/util/collecting_sink.h"
#include "tests/util/golden.h"
#include "tests/util/synthetic_arch.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

constexpr double kTolerance = 1e-4;  // per component, the bound

class EmbeddingGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EmbeddingGoldenTest, MatchesLlamaEmbedding) {
  const auto g = nlohmann::json::parse(
      testing::ReadFileOrDie(std::string(SPARROW_EMBEDDING_GOLDEN_DIR) + "/" + GetParam()));
  std::string path = testing::SharedDir() + "/" + g.at("model").get<std::string>();
  if (g.contains("synthetic")) {
    const auto family = testing::ParseArchFamily(g.at("synthetic").at("family").get<std::string>());
    ASSERT_TRUE(family.has_value()) << g.at("synthetic");
    path = testing::TempPath(GetParam() + ".gguf");  // removed when the test process exits
    const Status st =
        testing::WriteArchModel({*family, g.at("synthetic").at("seed").get<uint64_t>()}, path);
    if (!st.ok() && st.code() == StatusCode::kNotFound) GTEST_SKIP() << st.ToString();
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  if (!testing::FileExists(path)) GTEST_SKIP() << path << " is missing";
  auto m = Model::Load(path);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto tok = LoadTokenizer((*m)->file());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  SchedulerOptions o;
  o.n_ctx = g.at("n_ctx").get<int64_t>();
  // The reference's cache type (f32: llama.cpp rounds Q and the attention weights to F16 with an
  // F16 cache, Sparrow does not; stories260K's 64 components then differ by up to 1.5e-4).
  const auto kv = KvCacheTypeFromName(g.at("cache_type").get<std::string>());
  ASSERT_TRUE(kv.has_value());
  o.kv_types = {*kv, *kv};
  o.is_eog = [&](int32_t id) { return (*tok)->IsEog(id); };
  Scheduler sched(**m, nullptr, o);
  // Submitted together, so that they are batched as a busy server batches them.
  std::vector<std::shared_ptr<testing::CollectingSink>> sinks;
  for (const auto& c : g.at("cases")) {
    GenerationRequest r;
    r.prompt = (*tok)->Tokenize(c.at("text").get<std::string>(), true, false);
    r.embedding = PoolingFromName(c.at("pooling").get<std::string>());
    ASSERT_TRUE(r.embedding.has_value()) << c.at("pooling");
    sinks.push_back(std::make_shared<testing::CollectingSink>());
    r.sink = sinks.back();
    ASSERT_TRUE(sched.Submit(std::move(r)).ok());
  }
  size_t i = 0;
  double file_worst = 0;
  for (const auto& c : g.at("cases")) {
    SCOPED_TRACE(c.at("pooling").get<std::string>() + " '" + c.at("text").get<std::string>() + "'");
    const std::vector<float> got = sinks[i++]->WaitEmbedding();
    const std::vector<float> want = c.at("embedding").get<std::vector<float>>();
    ASSERT_EQ(got.size(), want.size());
    double worst = 0;
    for (size_t k = 0; k < got.size(); ++k)
      worst = std::max(worst, std::fabs(double(got[k]) - want[k]));
    EXPECT_LE(worst, kTolerance);
    file_worst = std::max(file_worst, worst);
  }
  std::printf("%s: %zu cases, max |difference| %.3g\n", GetParam().c_str(), i, file_worst);
}

INSTANTIATE_TEST_SUITE_P(Files, EmbeddingGoldenTest,
                         ::testing::ValuesIn(testing::JsonFileNames(SPARROW_EMBEDDING_GOLDEN_DIR)),
                         [](const auto& info) { return testing::GoldenParamName(info.param); });

}  // namespace
}  // namespace sparrow
