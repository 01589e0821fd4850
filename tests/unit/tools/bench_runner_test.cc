#include "engine/tools/bench_runner.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/tools/bench_report.h"
#include "tests/util/test_paths.h"

namespace sparrow::tools {
namespace {

BenchOptions SmallRun() {
  BenchOptions o;
  o.model = testing::ModelPath("stories260K.gguf");
  o.n_prompt = 8;
  o.n_gen = 4;
  o.threads = {1, 2};
  o.reps = 1;
  o.bandwidth_mib = 8;
  o.bandwidth_reps = 1;
  return o;
}

TEST(RunBench, JsonHasTheExpectedFields) {
  auto report = RunBench(SmallRun());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const nlohmann::json j = nlohmann::json::parse(BenchReportJson(*report));
  EXPECT_EQ(j["model"]["n_vocab"], 512);
  EXPECT_GT(j["model"]["size"].get<uint64_t>(), 0u);
  EXPECT_GT(j["model"]["n_params"].get<uint64_t>(), 0u);
  // The tied output makes the embedding part of the weights every token reads.
  EXPECT_GT(j["model"]["weight_bytes_per_token"].get<uint64_t>(), 0u);
  EXPECT_LE(j["model"]["weight_bytes_per_token"].get<uint64_t>(),
            j["model"]["size"].get<uint64_t>());
  EXPECT_GT(j["peak_rss_bytes"].get<uint64_t>(), 0u);
  ASSERT_EQ(j["bandwidth"].size(), 2u);
  EXPECT_GT(j["bandwidth"][0]["bytes_per_s"].get<double>(), 0);

  ASSERT_EQ(j["results"].size(), 4u);  // pp and tg for each thread count
  const std::vector<std::pair<std::string, int>> expected = {
      {"pp8", 1}, {"tg4", 1}, {"pp8", 2}, {"tg4", 2}};
  for (size_t i = 0; i < expected.size(); ++i) {
    const nlohmann::json& r = j["results"][i];
    EXPECT_EQ(r["test"], expected[i].first);
    EXPECT_EQ(r["n_threads"], expected[i].second);
    for (const char* key : {"avg_ts", "median_ts", "stddev_ts", "min_ts", "max_ts"}) {
      EXPECT_TRUE(r.contains(key)) << key;
    }
    ASSERT_EQ(r["samples_ts"].size(), 1u);
    EXPECT_GT(r["median_ts"].get<double>(), 0);
    EXPECT_EQ(r["roofline_fraction"].is_null(), expected[i].first[0] == 'p');
  }
  EXPECT_NE(BenchReportTable(*report).find("| tg4 |"), std::string::npos);
}

TEST(RunBench, RejectsBadOptions) {
  BenchOptions o = SmallRun();
  o.threads = {0};
  EXPECT_FALSE(RunBench(o).ok());
  o = SmallRun();
  o.n_prompt = 0;
  o.n_gen = 0;
  EXPECT_FALSE(RunBench(o).ok());
  o = SmallRun();
  o.n_prompt = 1 << 20;  // beyond the model's context
  EXPECT_FALSE(RunBench(o).ok());
  o = SmallRun();
  o.model = testing::TempPath("missing.gguf");
  auto r = RunBench(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("missing.gguf"), std::string::npos);
}

// --text: prompt and decoded tokens come from the text, in order; a text too short for -p, -n
// and -r, or one that cannot be read, is refused naming the file.
TEST(RunBench, TakesItsTokensFromAText) {
  const std::string text = testing::TempPath("bench-text.txt");
  {
    std::ofstream out(text);
    for (int i = 0; i < 20; ++i) out << "Once upon a time there was a little girl named Lily. ";
  }
  BenchOptions o = SmallRun();
  o.threads = {1};
  o.text_file = text;
  auto report = RunBench(o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->results.size(), 2u);
  EXPECT_GT(report->results[1].ts.median, 0);

  o.n_gen = 400;
  auto short_text = RunBench(o);
  ASSERT_FALSE(short_text.ok());
  EXPECT_NE(short_text.status().message().find("bench-text.txt"), std::string::npos);
  o = SmallRun();
  o.text_file = testing::TempPath("no-such-text.txt");
  auto missing = RunBench(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no-such-text.txt"), std::string::npos);
}

}  // namespace
}  // namespace sparrow::tools
