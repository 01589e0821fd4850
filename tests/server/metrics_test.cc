#include "server/core/metrics.h"

#include <gtest/gtest.h>

namespace sparrow::server {
namespace {

bool Has(const std::string& text, const std::string& line) {
  return text.find(line) != std::string::npos;
}

TEST(MetricsTest, RendersCountersHistogramsAndGauges) {
  Metrics m;
  FinishInfo a;
  a.reason = FinishReason::kLength;
  a.prompt_tokens = 5;
  a.completion_tokens = 48;
  a.ttft_ms = 20;
  a.total_ms = 300;
  m.RecordFinish(a);
  FinishInfo b;
  b.reason = FinishReason::kCancelled;
  b.prompt_tokens = 3;
  m.RecordFinish(b);
  m.ObserveTbt(0.003);
  m.RecordResponse("http", "200");
  SchedulerStats s;
  s.waiting = 2;
  s.running = 1;
  s.kv.used_blocks = 7;
  s.kv.total_blocks = 64;
  s.kv.prefix_hits = 3;
  const std::string text = m.Render(s);
  EXPECT_TRUE(Has(text, "sparrow_requests_total{status=\"length\"} 1\n"));
  EXPECT_TRUE(Has(text, "sparrow_requests_total{status=\"cancelled\"} 1\n"));
  EXPECT_TRUE(Has(text, "sparrow_requests_total{status=\"stop\"} 0\n"));
  EXPECT_TRUE(Has(text, "sparrow_prompt_tokens_total 8\n"));
  EXPECT_TRUE(Has(text, "sparrow_generated_tokens_total 48\n"));
  EXPECT_TRUE(Has(text, "# TYPE sparrow_ttft_seconds histogram\n"));
  EXPECT_TRUE(Has(text, "sparrow_ttft_seconds_bucket{le=\"0.01\"} 0\n"));
  EXPECT_TRUE(Has(text, "sparrow_ttft_seconds_bucket{le=\"0.025\"} 1\n"));
  EXPECT_TRUE(Has(text, "sparrow_ttft_seconds_bucket{le=\"+Inf\"} 1\n"));
  EXPECT_TRUE(Has(text, "sparrow_ttft_seconds_count 1\n"));
  EXPECT_TRUE(Has(text, "sparrow_tbt_seconds_bucket{le=\"0.005\"} 1\n"));
  EXPECT_TRUE(Has(text, "sparrow_queue_depth 2\n"));
  EXPECT_TRUE(Has(text, "sparrow_running 1\n"));
  EXPECT_TRUE(Has(text, "sparrow_kv_blocks_used 7\n"));
  EXPECT_TRUE(Has(text, "sparrow_kv_blocks_total 64\n"));
  EXPECT_TRUE(Has(text, "sparrow_prefix_cache_hits_total 3\n"));
  EXPECT_TRUE(Has(text, "sparrow_responses_total{frontend=\"http\",code=\"200\"} 1\n"));
}

TEST(MetricsTest, HistogramBucketsAreCumulative) {
  SecondsHistogram h;
  h.Observe(0.001);
  h.Observe(0.2);
  h.Observe(100);
  std::string out;
  h.Render("x", &out);
  EXPECT_TRUE(Has(out, "x_bucket{le=\"0.005\"} 1\n"));
  EXPECT_TRUE(Has(out, "x_bucket{le=\"0.25\"} 2\n"));
  EXPECT_TRUE(Has(out, "x_bucket{le=\"30\"} 2\n"));
  EXPECT_TRUE(Has(out, "x_bucket{le=\"+Inf\"} 3\n"));
  EXPECT_TRUE(Has(out, "x_count 3\n"));
}

}  // namespace
}  // namespace sparrow::server
