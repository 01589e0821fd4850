#include "server/core/metrics.h"

#include <cstdio>
#include <utility>

namespace sparrow::server {
namespace {

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

void Header(std::string_view name, std::string_view type, std::string_view help, std::string* out) {
  out->append("# HELP ").append(name).append(" ").append(help).append("\n");
  out->append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void Sample(std::string_view name, std::string_view labels, double v, std::string* out) {
  out->append(name);
  if (!labels.empty()) out->append("{").append(labels).append("}");
  out->append(" ").append(Num(v)).append("\n");
}

// Speculative decoding by where the drafts came from: the draft model, n-grams of the sequence's
// own text, the request's prediction. Accepted / drafted is each one's acceptance.
void RenderSpeculative(const SchedulerStats& s, std::string* out) {
  // One counter family with a sample per source.
  auto by_source = [out](std::string_view name, std::string_view help,
                         const std::array<int64_t, kDraftSources>& counts) {
    Header(name, "counter", help, out);
    for (int k = 0; k < kDraftSources; ++k) {
      Sample(name, std::string("source=\"") + DraftSourceName(static_cast<DraftSource>(k)) + "\"",
             static_cast<double>(counts[k]), out);
    }
  };
  by_source("sparrow_spec_draft_tokens_total",
            "Draft tokens the target verified, by source (draft, ngram, prediction).",
            s.spec_drafted);
  by_source("sparrow_spec_accepted_tokens_total",
            "Of those, the ones the target accepted (its own choice), by source.", s.spec_accepted);
  Header("sparrow_spec_draft_kv_bytes", "gauge", "The draft model's KV pool (0 without one).", out);
  Sample("sparrow_spec_draft_kv_bytes", "", static_cast<double>(s.spec_kv_bytes), out);
}

}  // namespace

void SecondsHistogram::Observe(double seconds) {
  for (size_t i = 0; i < kBounds.size(); ++i) {
    if (seconds <= kBounds[i]) {
      ++buckets_[i];
      break;
    }
  }
  ++count_;
  sum_ += seconds;
}

void SecondsHistogram::Render(std::string_view name, std::string* out) const {
  int64_t cumulative = 0;
  const std::string bucket = std::string(name) + "_bucket";
  for (size_t i = 0; i < kBounds.size(); ++i) {
    cumulative += buckets_[i];
    Sample(bucket, "le=\"" + Num(kBounds[i]) + "\"", static_cast<double>(cumulative), out);
  }
  Sample(bucket, "le=\"+Inf\"", static_cast<double>(count_), out);
  Sample(std::string(name) + "_sum", "", sum_, out);
  Sample(std::string(name) + "_count", "", static_cast<double>(count_), out);
}

void Metrics::RecordFinish(const FinishInfo& info) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_by_status_[FinishReasonName(info.reason)];
  prompt_tokens_ += info.prompt_tokens;
  cached_prompt_tokens_ += info.cached_prompt_tokens;
  generated_tokens_ += info.completion_tokens;
  if (info.completion_tokens > 0) {
    ttft_.Observe(info.ttft_ms / 1000.0);
    recent_ttft_.Add(info.ttft_ms);
  }
  e2e_.Observe(info.total_ms / 1000.0);
}

void Metrics::ObserveTbt(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  tbt_.Observe(seconds);
  recent_tbt_.Add(seconds * 1000.0);
}

void Metrics::CountAuthFailure(std::string_view code) {
  std::lock_guard<std::mutex> lock(mu_);
  ++auth_failures_[std::string(code)];
}

void Metrics::CountAdminAction(std::string_view action, std::string_view result) {
  std::lock_guard<std::mutex> lock(mu_);
  ++admin_actions_[{std::string(action), std::string(result)}];
}

Percentiles Metrics::RecentTtft(std::chrono::seconds span) const {
  std::lock_guard<std::mutex> lock(mu_);
  return recent_ttft_.Recent(span);
}

Percentiles Metrics::RecentTbt(std::chrono::seconds span) const {
  std::lock_guard<std::mutex> lock(mu_);
  return recent_tbt_.Recent(span);
}

void Metrics::RecordResponse(std::string_view frontend, std::string_view code) {
  std::lock_guard<std::mutex> lock(mu_);
  ++responses_[{std::string(frontend), std::string(code)}];
}

namespace {

// The neuron store of a model whose FFN is on flash (--cache-mb).
void RenderNeuronCache(const NeuronStoreStats& c, std::string* out) {
  auto one = [&](const char* name, const char* type, const char* help, double v) {
    Header(name, type, help, out);
    Sample(name, "", v, out);
  };
  Header("sparrow_neuron_cache_lookups_total", "counter",
         "Neuron bundles a step needed, by where they were found.", out);
  Sample("sparrow_neuron_cache_lookups_total", "result=\"hot\"", static_cast<double>(c.hot_hits),
         out);
  Sample("sparrow_neuron_cache_lookups_total", "result=\"hit\"", static_cast<double>(c.cache.hits),
         out);
  Sample("sparrow_neuron_cache_lookups_total", "result=\"miss\"",
         static_cast<double>(c.cache.misses), out);
  one("sparrow_neuron_cache_evictions_total", "counter", "Bundles dropped from the cache.",
      static_cast<double>(c.cache.evictions));
  one("sparrow_neuron_cache_capacity_bytes", "gauge", "Bytes the neuron cache may use.",
      static_cast<double>(c.capacity_bytes));
  one("sparrow_neuron_cache_resident_bytes", "gauge",
      "Bytes the neuron cache holds (hot segment and cache chunks).",
      static_cast<double>(c.held_bytes()));
  one("sparrow_neuron_cache_layer_reads_total", "counter",
      "Whole layers read for steps that needed most neurons (prompts).",
      static_cast<double>(c.layer_reads));
  one("sparrow_prefetch_reads_total", "counter",
      "Bundles (experts) read ahead on a guess at the next layer's choice.",
      static_cast<double>(c.prefetch_reads));
  one("sparrow_prefetch_used_total", "counter",
      "Bundles read ahead that the next layer then asked for (the guess was right).",
      static_cast<double>(c.prefetch_used));
  one("sparrow_flash_read_bytes_total", "counter", "Bytes read from the model file.",
      static_cast<double>(c.reads.bytes));
  one("sparrow_flash_reads_failed_total", "counter", "Reads of the model file that failed.",
      static_cast<double>(c.reads.failed_reads));
  one("sparrow_flash_wait_seconds_total", "counter",
      "Time steps waited for reads of the model file that compute did not hide.",
      static_cast<double>(c.wait_micros) / 1e6);
  Header("sparrow_flash_read_seconds", "histogram", "Latency of one read of the model file.", out);
  int64_t cumulative = 0;
  for (size_t b = 0; b < c.reads.latency.size(); ++b) {
    cumulative += c.reads.latency[b];
    const std::string le = b < BundleReadStats::kBucketMicros.size()
                               ? Num(static_cast<double>(BundleReadStats::kBucketMicros[b]) / 1e6)
                               : std::string("+Inf");
    Sample("sparrow_flash_read_seconds_bucket", "le=\"" + le + "\"",
           static_cast<double>(cumulative), out);
  }
  Sample("sparrow_flash_read_seconds_sum", "", static_cast<double>(c.reads.latency_micros) / 1e6,
         out);
  Sample("sparrow_flash_read_seconds_count", "", static_cast<double>(cumulative), out);
}

// The memory budget controller (issue "Adaptive memory").
void RenderMemory(const MemoryGovernorStats& m, const SchedulerStats& s, std::string* out) {
  Header("sparrow_memory_budget_bytes", "gauge",
         "Bytes each consumer may hold now (the memory budget's split).", out);
  const std::pair<const char*, uint64_t> consumers[] = {
      {"consumer=\"process\"", m.split.baseline},
      {"consumer=\"weights\"", m.split.weights},
      {"consumer=\"scratch\"", m.split.scratch},
      {"consumer=\"kv_pool\"", m.split.kv_pool},
      {"consumer=\"neuron_cache\"", m.split.neuron_cache},
      {"consumer=\"total\"", m.budget_bytes}};
  for (const auto& [label, bytes] : consumers) {
    Sample("sparrow_memory_budget_bytes", label, static_cast<double>(bytes), out);
  }
  Header("sparrow_memory_held_bytes", "gauge",
         "Bytes each consumer holds now (their total agrees with the process's RSS).", out);
  const std::pair<const char*, uint64_t> held[] = {
      {"consumer=\"process\"", m.held.baseline},          {"consumer=\"weights\"", m.held.weights},
      {"consumer=\"scratch\"", m.held.scratch},           {"consumer=\"kv_pool\"", m.held.kv_pool},
      {"consumer=\"neuron_cache\"", m.held.neuron_cache}, {"consumer=\"total\"", m.held.total()}};
  for (const auto& [label, bytes] : held) {
    Sample("sparrow_memory_held_bytes", label, static_cast<double>(bytes), out);
  }
  Header("sparrow_process_resident_bytes", "gauge", "The process's resident bytes (RSS).", out);
  Sample("sparrow_process_resident_bytes", "", static_cast<double>(m.rss_bytes), out);
  Header("sparrow_memory_ceiling_bytes", "gauge", "The whole budget with no pressure.", out);
  Sample("sparrow_memory_ceiling_bytes", "", static_cast<double>(m.ceiling_bytes), out);
  Header("sparrow_memory_floor_bytes", "gauge", "The least budget that makes progress.", out);
  Sample("sparrow_memory_floor_bytes", "", static_cast<double>(m.floor_bytes), out);
  if (m.run_plan) {
    Header("sparrow_memory_plan_threads", "gauge", "Compute threads the memory plan chose.", out);
    Sample("sparrow_memory_plan_threads", "", m.run_plan->threads, out);
    Header("sparrow_memory_plan_predicted_tokens_per_second", "gauge",
           "Decode speed the memory plan predicts.", out);
    Sample("sparrow_memory_plan_predicted_tokens_per_second", "",
           m.run_plan->predicted_tokens_per_s, out);
  }
  // The level in force, with or without a planner (a sparse model started at its level).
  if (s.sparsity) {
    Header("sparrow_memory_plan_sparsity", "gauge",
           "Share of FFN neurons skipped per decoded token at the sparsity level in force.", out);
    Sample("sparrow_memory_plan_sparsity", "", *s.sparsity, out);
  }
  Header("sparrow_kv_pool_mapped_bytes", "gauge", "Memory the KV pool's blocks take now.", out);
  Sample("sparrow_kv_pool_mapped_bytes", "", static_cast<double>(s.kv.mapped_bytes), out);
  Header("sparrow_memory_pressure_level", "gauge",
         "Highest pressure heard recently: 0 none, 1 low, 2 medium, 3 critical.", out);
  Sample("sparrow_memory_pressure_level", "", static_cast<double>(m.level), out);
  Header("sparrow_memory_starved", "gauge", "1 while even the plan's floor does not fit.", out);
  Sample("sparrow_memory_starved", "", m.starved ? 1.0 : 0.0, out);
  Header("sparrow_memory_replans_total", "counter", "Memory plans by cause.", out);
  Sample("sparrow_memory_replans_total", "cause=\"pressure\"", static_cast<double>(m.shrinks), out);
  Sample("sparrow_memory_replans_total", "cause=\"grow\"", static_cast<double>(m.grows), out);
  Sample("sparrow_memory_replans_total", "cause=\"operator\"",
         static_cast<double>(m.operator_changes), out);
  Header("sparrow_memory_plan_version", "gauge", "The last memory plan the scheduler applied.",
         out);
  Sample("sparrow_memory_plan_version", "", static_cast<double>(s.memory_plan_version), out);
  Header("sparrow_memory_replan_seconds", "gauge",
         "From the last budget decision to its application between two steps.", out);
  Sample("sparrow_memory_replan_seconds", "", s.memory_plan_latency_ms / 1000.0, out);
}

}  // namespace

std::string Metrics::Render(const SchedulerStats& s, const MemoryGovernorStats* memory) const {
  std::string out;
  std::lock_guard<std::mutex> lock(mu_);
  Header("sparrow_requests_total", "counter", "Finished generations by finish reason.", &out);
  for (const char* r : {"stop", "length", "context", "cancelled", "error"}) {
    auto it = requests_by_status_.find(r);
    Sample("sparrow_requests_total", std::string("status=\"") + r + "\"",
           it == requests_by_status_.end() ? 0.0 : static_cast<double>(it->second), &out);
  }
  Header("sparrow_responses_total", "counter", "Answered calls by frontend and status code.", &out);
  for (const auto& [key, n] : responses_) {
    Sample("sparrow_responses_total", "frontend=\"" + key.first + "\",code=\"" + key.second + "\"",
           static_cast<double>(n), &out);
  }
  Header("sparrow_prompt_tokens_total", "counter", "Prompt tokens of finished requests.", &out);
  Sample("sparrow_prompt_tokens_total", "", static_cast<double>(prompt_tokens_), &out);
  Header("sparrow_prompt_tokens_cached_total", "counter",
         "Prompt tokens served by the prefix cache.", &out);
  Sample("sparrow_prompt_tokens_cached_total", "", static_cast<double>(cached_prompt_tokens_),
         &out);
  Header("sparrow_generated_tokens_total", "counter", "Generated tokens.", &out);
  Sample("sparrow_generated_tokens_total", "", static_cast<double>(generated_tokens_), &out);
  Header("sparrow_ttft_seconds", "histogram", "Time from submit to the first token.", &out);
  ttft_.Render("sparrow_ttft_seconds", &out);
  Header("sparrow_tbt_seconds", "histogram", "Time between two tokens of one stream.", &out);
  tbt_.Render("sparrow_tbt_seconds", &out);
  Header("sparrow_request_duration_seconds", "histogram", "Time from submit to finish.", &out);
  e2e_.Render("sparrow_request_duration_seconds", &out);

  Header("sparrow_http_connections_open", "gauge", "Open HTTP connections.", &out);
  Sample("sparrow_http_connections_open", "", static_cast<double>(connections_open_.load()), &out);
  Header("sparrow_http_connections_refused_total", "counter",
         "Connections closed at once because max_connections were open.", &out);
  Sample("sparrow_http_connections_refused_total", "",
         static_cast<double>(connections_refused_.load()), &out);
  Header("sparrow_http_accept_fd_errors_total", "counter",
         "accept() failures for want of file descriptors (EMFILE/ENFILE).", &out);
  Sample("sparrow_http_accept_fd_errors_total", "", static_cast<double>(accept_fd_errors_.load()),
         &out);
  Header("sparrow_http_tls_handshake_failures_total", "counter",
         "HTTPS connections closed because the TLS handshake failed (plain HTTP to the TLS port, "
         "a client that does not trust the certificate, no shared protocol).",
         &out);
  Sample("sparrow_http_tls_handshake_failures_total", "",
         static_cast<double>(tls_handshake_failures_.load()), &out);

  Header("sparrow_auth_failures_total", "counter",
         "Refused key checks by reason (invalid_api_key, insufficient_scope, admin_disabled, "
         "host_disabled, too_many_auth_failures).",
         &out);
  for (const auto& [code, n] : auth_failures_) {
    Sample("sparrow_auth_failures_total", "reason=\"" + code + "\"", static_cast<double>(n), &out);
  }
  Header("sparrow_admin_actions_total", "counter", "Admin API actions by action and result.", &out);
  for (const auto& [key, n] : admin_actions_) {
    Sample("sparrow_admin_actions_total",
           "action=\"" + key.first + "\",result=\"" + key.second + "\"", static_cast<double>(n),
           &out);
  }

  Header("sparrow_queue_depth", "gauge", "Requests waiting for admission.", &out);
  Sample("sparrow_queue_depth", "", static_cast<double>(s.waiting), &out);
  Header("sparrow_running", "gauge", "Sequences being generated.", &out);
  Sample("sparrow_running", "", static_cast<double>(s.running), &out);
  Header("sparrow_kv_blocks_used", "gauge", "KV blocks referenced by sequences.", &out);
  Sample("sparrow_kv_blocks_used", "", static_cast<double>(s.kv.used_blocks), &out);
  Header("sparrow_kv_blocks_cached", "gauge", "Unreferenced KV blocks kept for prefix reuse.",
         &out);
  Sample("sparrow_kv_blocks_cached", "", static_cast<double>(s.kv.cached_blocks), &out);
  Header("sparrow_kv_blocks_total", "gauge", "KV blocks in the pool.", &out);
  Sample("sparrow_kv_blocks_total", "", static_cast<double>(s.kv.total_blocks), &out);
  // What the Gateway API Inference Extension's endpoint picker reads as KV-cache utilisation
  // (--kv-cache-usage-percentage-metric): the share of the pool's blocks sequences hold, 0 to 1.
  Header("sparrow_kv_cache_usage_ratio", "gauge",
         "Share of the KV pool's blocks referenced by sequences (0 to 1).", &out);
  Sample("sparrow_kv_cache_usage_ratio", "",
         s.kv.total_blocks > 0
             ? static_cast<double>(s.kv.used_blocks) / static_cast<double>(s.kv.total_blocks)
             : 0.0,
         &out);
  Header("sparrow_prefix_cache_hits_total", "counter", "KV blocks reused from the prefix cache.",
         &out);
  Sample("sparrow_prefix_cache_hits_total", "", static_cast<double>(s.kv.prefix_hits), &out);
  Header("sparrow_prefix_cache_lookups_total", "counter", "Prefix cache lookups.", &out);
  Sample("sparrow_prefix_cache_lookups_total", "", static_cast<double>(s.kv.prefix_lookups), &out);
  Header("sparrow_preemptions_total", "counter", "Sequences preempted for KV space.", &out);
  Sample("sparrow_preemptions_total", "", static_cast<double>(s.preemptions), &out);
  Header("sparrow_scheduler_steps_total", "counter", "Forward passes run.", &out);
  Sample("sparrow_scheduler_steps_total", "", static_cast<double>(s.steps), &out);
  RenderSpeculative(s, &out);
  // The FFN's mode as a label; computed / total is the share of neurons decoded tokens use.
  const std::string mode = "mode=\"" + std::string(s.ffn_mode) + "\"";
  Header("sparrow_ffn_neurons_total", "counter",
         "FFN neurons of decoded tokens (n_ff per layer per token).", &out);
  Sample("sparrow_ffn_neurons_total", mode, static_cast<double>(s.ffn.neurons_total), &out);
  Header("sparrow_ffn_neurons_computed_total", "counter",
         "Of those, the ones computed (all when dense; the active ones when sparse).", &out);
  Sample("sparrow_ffn_neurons_computed_total", mode, static_cast<double>(s.ffn.neurons_computed),
         &out);
  if (s.neuron_cache) RenderNeuronCache(*s.neuron_cache, &out);
  if (memory) RenderMemory(*memory, s, &out);
  return out;
}

}  // namespace sparrow::server
