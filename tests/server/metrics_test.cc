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
  // The endpoint picker's KV-cache utilisation: 7 of 64 blocks.
  EXPECT_TRUE(Has(text, "sparrow_kv_cache_usage_ratio 0.109375\n"));
  EXPECT_TRUE(Has(text, "sparrow_prefix_cache_hits_total 3\n"));
  EXPECT_TRUE(Has(text, "sparrow_responses_total{frontend=\"http\",code=\"200\"} 1\n"));
}

// Speculative decoding's counters by source, each source named even before it drafts.
TEST(MetricsTest, SpeculativeCountersAreBySource) {
  Metrics m;
  SchedulerStats s;
  s.spec_drafted[static_cast<int>(DraftSource::kModel)] = 40;
  s.spec_accepted[static_cast<int>(DraftSource::kModel)] = 13;
  s.spec_drafted[static_cast<int>(DraftSource::kPrediction)] = 9;
  s.spec_accepted[static_cast<int>(DraftSource::kPrediction)] = 9;
  s.spec_kv_bytes = 1 << 20;
  const std::string text = m.Render(s);
  EXPECT_TRUE(Has(text, "# TYPE sparrow_spec_draft_tokens_total counter\n"));
  EXPECT_TRUE(Has(text, "sparrow_spec_draft_tokens_total{source=\"draft\"} 40\n")) << text;
  EXPECT_TRUE(Has(text, "sparrow_spec_accepted_tokens_total{source=\"draft\"} 13\n"));
  EXPECT_TRUE(Has(text, "sparrow_spec_draft_tokens_total{source=\"ngram\"} 0\n"));
  EXPECT_TRUE(Has(text, "sparrow_spec_accepted_tokens_total{source=\"prediction\"} 9\n"));
  EXPECT_TRUE(Has(text, "sparrow_spec_draft_kv_bytes 1048576\n"));
}

// A model whose FFN is on flash (--cache-mb): the neuron store's counters, its read-latency
// histogram cumulative; a model in memory has none of them.
TEST(MetricsTest, NeuronCacheCountersAppearWithAStore) {
  Metrics m;
  SchedulerStats s;
  EXPECT_FALSE(Has(m.Render(s), "sparrow_neuron_cache"));
  NeuronStoreStats c;
  c.hot_hits = 40;
  c.cache.hits = 7;
  c.cache.misses = 3;
  c.cache.evictions = 2;
  c.capacity_bytes = 1 << 20;
  c.hot_bytes = 4096;
  c.cache.mapped_bytes = 4 << 20;  // a whole chunk mapped, two records' bytes in it held
  c.cache.held_bytes = 8192;
  c.reads.bytes = 12288;
  c.reads.latency[0] = 1;
  c.reads.latency[2] = 2;
  c.reads.latency_micros = 400;
  c.wait_micros = 250000;
  s.neuron_cache = c;
  const std::string text = m.Render(s);
  EXPECT_TRUE(Has(text, "sparrow_neuron_cache_lookups_total{result=\"hot\"} 40\n"));
  EXPECT_TRUE(Has(text, "sparrow_neuron_cache_lookups_total{result=\"hit\"} 7\n"));
  EXPECT_TRUE(Has(text, "sparrow_neuron_cache_lookups_total{result=\"miss\"} 3\n"));
  EXPECT_TRUE(Has(text, "sparrow_neuron_cache_evictions_total 2\n"));
  EXPECT_TRUE(Has(text, "sparrow_neuron_cache_capacity_bytes 1048576\n"));
  EXPECT_TRUE(Has(text, "sparrow_neuron_cache_resident_bytes 12288\n"));
  EXPECT_TRUE(Has(text, "sparrow_flash_read_bytes_total 12288\n"));
  EXPECT_TRUE(Has(text, "sparrow_flash_read_seconds_bucket{le=\"5e-05\"} 1\n"));
  EXPECT_TRUE(Has(text, "sparrow_flash_read_seconds_bucket{le=\"0.0001\"} 1\n"));
  EXPECT_TRUE(Has(text, "sparrow_flash_read_seconds_bucket{le=\"0.0002\"} 3\n"));
  EXPECT_TRUE(Has(text, "sparrow_flash_read_seconds_bucket{le=\"+Inf\"} 3\n"));
  EXPECT_TRUE(Has(text, "sparrow_flash_read_seconds_sum 0.0004\n"));
  EXPECT_TRUE(Has(text, "sparrow_flash_read_seconds_count 3\n"));
  EXPECT_TRUE(Has(text, "sparrow_flash_wait_seconds_total 0.25\n"));
}

TEST(MetricsTest, MemoryBudgetGaugesAppearWithAController) {
  Metrics m;
  SchedulerStats s;
  EXPECT_FALSE(Has(m.Render(s), "sparrow_memory_"));
  s.memory_plan_version = 7;
  s.memory_plan_latency_ms = 2.5;
  MemoryGovernorStats g;
  g.split.weights = 5 << 20;
  g.split.scratch = 1 << 10;
  g.split.kv_pool = 2 << 20;
  g.split.neuron_cache = 1 << 20;
  g.budget_bytes = g.split.total();
  g.ceiling_bytes = 16 << 20;
  g.floor_bytes = 7 << 20;
  s.kv.mapped_bytes = 3 << 20;
  g.level = PressureLevel::kMedium;
  g.shrinks = 3;
  g.grows = 2;
  g.operator_changes = 1;
  const std::string text = m.Render(s, &g);
  EXPECT_TRUE(Has(text, "sparrow_memory_budget_bytes{consumer=\"weights\"} 5242880\n"));
  EXPECT_TRUE(Has(text, "sparrow_memory_budget_bytes{consumer=\"scratch\"} 1024\n"));
  EXPECT_TRUE(Has(text, "sparrow_memory_budget_bytes{consumer=\"kv_pool\"} 2097152\n"));
  EXPECT_TRUE(Has(text, "sparrow_memory_budget_bytes{consumer=\"neuron_cache\"} 1048576\n"));
  EXPECT_TRUE(Has(text, "sparrow_memory_budget_bytes{consumer=\"total\"} 8389632\n"));
  EXPECT_TRUE(Has(text, "sparrow_memory_ceiling_bytes 16777216\n"));
  EXPECT_TRUE(Has(text, "sparrow_memory_floor_bytes 7340032\n"));
  EXPECT_TRUE(Has(text, "sparrow_kv_pool_mapped_bytes 3145728\n"));
  EXPECT_TRUE(Has(text, "sparrow_memory_pressure_level 2\n"));
  EXPECT_TRUE(Has(text, "sparrow_memory_starved 0\n"));
  EXPECT_TRUE(Has(text, "sparrow_memory_replans_total{cause=\"pressure\"} 3\n"));
  EXPECT_TRUE(Has(text, "sparrow_memory_replans_total{cause=\"grow\"} 2\n"));
  EXPECT_TRUE(Has(text, "sparrow_memory_replans_total{cause=\"operator\"} 1\n"));
  EXPECT_TRUE(Has(text, "sparrow_memory_plan_version 7\n"));
  EXPECT_TRUE(Has(text, "sparrow_memory_replan_seconds 0.0025\n"));
  EXPECT_FALSE(Has(text, "sparrow_memory_plan_sparsity")) << "no switchable level";
  s.sparsity = 0.25;
  EXPECT_TRUE(Has(m.Render(s, &g), "sparrow_memory_plan_sparsity 0.25\n"));
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
