#pragma once
// ServerStatus: what an operator sees of a running sparrowd (the admin status route and RPC,
// each event-stream snapshot): version, model, uptime, requests, throughput, latency
// percentiles, KV cache, sparse FFN and memory. One struct, two renderings: JSON here, the
// proto in the gRPC admin service, with the same field names.
// Pure functions; CollectStatus is thread-safe.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/core/latency_window.h"
#include "server/core/request_registry.h"
#include "server/core/server_context.h"

namespace sparrow::server {

struct ModelStatus {
  std::string id, file, architecture;
  int64_t file_bytes = 0;
  int64_t n_ctx = 0;
  std::map<std::string, int64_t> tensor_types;  // type name -> tensors of that type
};

// The neuron cache of a model whose FFN is on flash (cache_mb), over the run so far.
struct NeuronCacheStatus {
  int64_t capacity_bytes = 0;  // what the budget (or cache_mb) gives it
  int64_t resident_bytes = 0;  // what it holds: the hot segment and the cached bundles
  int64_t lookups = 0;         // neuron bundles the steps needed
  int64_t hits = 0;            // of those, the ones found in memory (hot segment or cache)
};

struct ServerStatus {
  std::string version;
  ModelStatus model;
  double uptime_s = 0;
  int64_t threads = 0;
  std::string log_level;
  bool draining = false;
  bool drained = false;  // draining and nothing left running or waiting
  int64_t running = 0, waiting = 0;
  std::vector<RequestSnapshot> requests;
  double tokens_per_s_10s = 0, tokens_per_s_60s = 0;
  int64_t generated_tokens = 0, prompt_tokens = 0;
  int64_t requests_finished = 0, requests_cancelled = 0, requests_failed = 0;
  Percentiles ttft_ms, tbt_ms;  // over the last minute
  int64_t kv_blocks_total = 0, kv_blocks_used = 0, kv_blocks_cached = 0, kv_blocks_free = 0;
  int64_t kv_block_size = 0;
  double prefix_hit_rate = 0;
  std::string ffn_mode;
  double ffn_active_fraction = 1;  // neurons computed / total over decoded tokens so far
  std::optional<NeuronCacheStatus> neuron_cache;  // none without a neuron cache
  int64_t rss_bytes = 0;
  // The whole process's memory budget, its bounds and the operator's budget, with a memory
  // governor (memory_pressure 1 or 2); none without one.
  std::optional<int64_t> budget_bytes, ceiling_bytes, floor_bytes;
  std::optional<int64_t> operator_budget_bytes;  // only while the operator has set one
  std::optional<int64_t> held_bytes;             // what the budget's consumers hold now
  int64_t event_subscribers = 0;
};

// The store's counters as the status shows them: lookups are every bundle a step needed, hits the
// ones the hot segment or the cache held.
NeuronCacheStatus NeuronCacheStatusOf(const NeuronStoreStats& store);

// The memory budget as GET /admin/v1/memory and the gRPC MemoryBudget give it.
nlohmann::json MemoryJson(const MemoryGovernorStats& m, const SchedulerStats& s);

// GET /admin/v1/shards: where each layer is computed and how each worker's link has gone;
// a model on this device alone is one placement and no links.
nlohmann::json ShardsJson(const ServedModel& served);

// The served model; fixed until a reload, so callers describe it once per model.
ModelStatus DescribeModel(const ServedModel& served);
// Everything but the throughput, which the caller measures over time (AdminController).
ServerStatus CollectStatus(const ServerContext& ctx, const ModelStatus& model);

nlohmann::json StatusJson(const ServerStatus& s);
nlohmann::json ModelStatusJson(const ModelStatus& m);
nlohmann::json RequestJson(const RequestSnapshot& r, const Tokenizer* tokenizer_for_prompt);

}  // namespace sparrow::server
