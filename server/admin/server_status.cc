#include "server/admin/server_status.h"

#include <spdlog/spdlog.h>

#include "config/version.h"
#include "engine/memory/device_memory.h"

namespace sparrow::server {
namespace {

using json = nlohmann::json;

json PercentilesJson(const Percentiles& p) {
  return {{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"count", p.count}};
}

// The hit rate only once there were lookups: a rate of nothing is not a rate of 0.
json NeuronCacheJson(const NeuronCacheStatus& c) {
  json j = {{"capacity_bytes", c.capacity_bytes},
            {"resident_bytes", c.resident_bytes},
            {"lookups", c.lookups},
            {"hits", c.hits}};
  if (c.lookups > 0) j["hit_rate"] = static_cast<double>(c.hits) / static_cast<double>(c.lookups);
  return j;
}

// The budget's fields only where a memory governor runs (budget_bytes stays, null, without one:
// older clients read it).
json MemoryStatusJson(const ServerStatus& s) {
  json j = {{"rss_bytes", s.rss_bytes},
            {"budget_bytes", s.budget_bytes ? json(*s.budget_bytes) : json(nullptr)}};
  if (s.ceiling_bytes) j["ceiling_bytes"] = *s.ceiling_bytes;
  if (s.floor_bytes) j["floor_bytes"] = *s.floor_bytes;
  if (s.operator_budget_bytes) j["operator_budget_bytes"] = *s.operator_budget_bytes;
  if (s.held_bytes) j["held_bytes"] = *s.held_bytes;
  return j;
}

}  // namespace

ModelStatus DescribeModel(const ServedModel& served) {
  ModelStatus m;
  const GgufFile& f = served.model->file();
  m.id = served.model_id;
  m.file = f.path().substr(f.path().find_last_of('/') + 1);
  m.file_bytes = static_cast<int64_t>(f.file_size());
  const ArchSpec* arch = served.model->config().arch;
  m.architecture = arch ? std::string(arch->name) : "";
  m.n_ctx = served.n_ctx;
  for (const auto& t : f.tensors()) ++m.tensor_types[std::string(TensorTypeName(t.type))];
  return m;
}

NeuronCacheStatus NeuronCacheStatusOf(const NeuronStoreStats& store) {
  return {.capacity_bytes = static_cast<int64_t>(store.capacity_bytes),
          .resident_bytes = static_cast<int64_t>(store.held_bytes()),
          .lookups = store.hot_hits + store.cache.hits + store.cache.misses,
          .hits = store.hot_hits + store.cache.hits};
}

ServerStatus CollectStatus(const ServerContext& ctx, const ModelStatus& model) {
  ServerStatus s;
  s.version = kSparrowVersion;
  s.model = model;
  s.uptime_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - ctx.started).count();
  const std::shared_ptr<ServedModel> served = ctx.served();
  s.threads = served->pool ? served->pool->size() : 0;
  s.log_level = std::string(spdlog::level::to_string_view(spdlog::get_level()).data(),
                            spdlog::level::to_string_view(spdlog::get_level()).size());
  const SchedulerStats st = served->scheduler->Stats();
  s.running = st.running;
  s.waiting = st.waiting;
  s.draining = ctx.draining.load();
  s.requests = ctx.requests.List(false);
  s.drained = s.draining && st.running == 0 && st.waiting == 0 && s.requests.empty();
  s.generated_tokens = st.generated_tokens;
  s.prompt_tokens = st.prompt_tokens;
  s.requests_finished = st.requests_finished;
  s.requests_cancelled = st.requests_cancelled;
  s.requests_failed = st.requests_failed;
  s.ttft_ms = ctx.metrics.RecentTtft(std::chrono::seconds(60));
  s.tbt_ms = ctx.metrics.RecentTbt(std::chrono::seconds(60));
  s.kv_blocks_total = st.kv.total_blocks;
  s.kv_blocks_used = st.kv.used_blocks;
  s.kv_blocks_cached = st.kv.cached_blocks;
  s.kv_blocks_free = st.kv.free_blocks;
  s.kv_block_size = served->scheduler->options().kv_block_size;
  s.prefix_hit_rate = st.kv.prefix_lookups > 0 ? static_cast<double>(st.kv.prefix_hits) /
                                                     static_cast<double>(st.kv.prefix_lookups)
                                               : 0.0;
  s.ffn_mode = std::string(st.ffn_mode);
  s.ffn_active_fraction = st.ffn.neurons_total > 0 ? static_cast<double>(st.ffn.neurons_computed) /
                                                         static_cast<double>(st.ffn.neurons_total)
                                                   : 1.0;
  if (st.neuron_cache) s.neuron_cache = NeuronCacheStatusOf(*st.neuron_cache);
  s.rss_bytes = static_cast<int64_t>(ProcessResidentBytes());
  if (served->memory) {
    const MemoryGovernorStats m = served->memory->stats();
    s.budget_bytes = static_cast<int64_t>(m.budget_bytes);
    s.ceiling_bytes = static_cast<int64_t>(m.ceiling_bytes);
    s.floor_bytes = static_cast<int64_t>(m.floor_bytes);
    if (m.operator_budget_bytes)
      s.operator_budget_bytes = static_cast<int64_t>(*m.operator_budget_bytes);
    s.held_bytes = static_cast<int64_t>(m.held.total());
  }
  return s;
}

json RequestJson(const RequestSnapshot& r, const Tokenizer* tokenizer_for_prompt) {
  json j = {{"id", r.id},
            {"frontend", r.frontend},
            {"route", r.route},
            {"remote", r.remote},
            {"key_id", r.key_id},
            {"state", r.state},
            {"age_ms", r.age_ms},
            {"stream", r.stream},
            {"n", r.n},
            {"prompt_tokens", r.prompt_tokens},
            {"generated_tokens", r.generated_tokens},
            {"max_tokens", r.max_tokens},
            {"cancelling", r.cancelling}};
  if (tokenizer_for_prompt) j["prompt"] = tokenizer_for_prompt->Detokenize(r.prompt, false, true);
  return j;
}

json ModelStatusJson(const ModelStatus& m) {
  return {{"id", m.id},
          {"file", m.file},
          {"file_bytes", m.file_bytes},
          {"architecture", m.architecture},
          {"n_ctx", m.n_ctx},
          {"tensor_types", m.tensor_types}};
}

json StatusJson(const ServerStatus& s) {
  json requests = json::array();
  for (const auto& r : s.requests) requests.push_back(RequestJson(r, nullptr));
  json sparse = {{"mode", s.ffn_mode}, {"active_fraction", s.ffn_active_fraction}};
  if (s.neuron_cache) sparse["neuron_cache"] = NeuronCacheJson(*s.neuron_cache);
  return {
      {"version", s.version},
      {"model", ModelStatusJson(s.model)},
      {"uptime_s", s.uptime_s},
      {"threads", s.threads},
      {"log_level", s.log_level},
      {"draining", s.draining},
      {"drained", s.drained},
      {"running", s.running},
      {"waiting", s.waiting},
      {"requests", requests},
      {"throughput",
       {{"tokens_per_s_10s", s.tokens_per_s_10s},
        {"tokens_per_s_60s", s.tokens_per_s_60s},
        {"generated_tokens", s.generated_tokens},
        {"prompt_tokens", s.prompt_tokens},
        {"requests_finished", s.requests_finished},
        {"requests_cancelled", s.requests_cancelled},
        {"requests_failed", s.requests_failed}}},
      {"latency", {{"ttft_ms", PercentilesJson(s.ttft_ms)}, {"tbt_ms", PercentilesJson(s.tbt_ms)}}},
      {"kv",
       {{"blocks_total", s.kv_blocks_total},
        {"blocks_used", s.kv_blocks_used},
        {"blocks_cached", s.kv_blocks_cached},
        {"blocks_free", s.kv_blocks_free},
        {"block_size", s.kv_block_size},
        {"prefix_hit_rate", s.prefix_hit_rate}}},
      {"sparse", sparse},
      {"memory", MemoryStatusJson(s)},
      {"event_subscribers", s.event_subscribers},
  };
}

json MemoryJson(const MemoryGovernorStats& m, const SchedulerStats& s) {
  json j = {{"budget_bytes", m.budget_bytes},
            {"ceiling_bytes", m.ceiling_bytes},
            {"floor_bytes", m.floor_bytes},
            {"consumers",
             {{"process_bytes", m.split.baseline},
              {"weights_bytes", m.split.weights},
              {"scratch_bytes", m.split.scratch},
              {"kv_pool_bytes", m.split.kv_pool},
              {"neuron_cache_bytes", m.split.neuron_cache}}},
            {"held",
             {{"process_bytes", m.held.baseline},
              {"weights_bytes", m.held.weights},
              {"scratch_bytes", m.held.scratch},
              {"kv_pool_bytes", m.held.kv_pool},
              {"neuron_cache_bytes", m.held.neuron_cache}}},
            {"held_bytes", m.held.total()},
            {"rss_bytes", m.rss_bytes},
            {"kv_pool",
             {{"blocks", s.kv.total_blocks},
              {"used_blocks", s.kv.used_blocks},
              {"mapped_bytes", s.kv.mapped_bytes}}},
            {"operator_budget_bytes", nullptr},
            {"pressure_level", std::string(PressureLevelName(m.level))},
            {"starved", m.starved},
            {"plan_version", m.plan_version},
            {"applied_plan_version", s.memory_plan_version},
            {"replan_latency_ms", s.memory_plan_latency_ms},
            {"shrinks", m.shrinks},
            {"grows", m.grows},
            {"operator_changes", m.operator_changes},
            {"sources", m.sources}};
  if (m.operator_budget_bytes) j["operator_budget_bytes"] = *m.operator_budget_bytes;
  j["plan"] = nullptr;
  if (m.run_plan) {
    const plan::RunPlan& r = *m.run_plan;
    j["plan"] = {{"threads", r.threads},
                 {"neuron_cache_bytes", r.neuron_cache_bytes},
                 {"kv_pool_bytes", r.kv_pool_bytes},
                 {"sparsity", r.sparsity},
                 {"predicted_tokens_per_s", r.predicted_tokens_per_s},
                 {"memory_bytes", r.memory_bytes},
                 {"binding", r.binding},
                 {"solve_ms", r.solve_ms}};
  }
  j["plan_error"] = m.plan_error;
  // The level in force, which the plan's may differ from (a level the server may not run at).
  if (s.sparsity) j["sparsity"] = *s.sparsity;
  if (s.neuron_cache) {
    j["neuron_cache"] = {{"capacity_bytes", s.neuron_cache->capacity_bytes},
                         {"resident_bytes", s.neuron_cache->held_bytes()}};
  }
  return j;
}

nlohmann::json ShardsJson(const ServedModel& served) {
  nlohmann::json placement = nlohmann::json::array();
  nlohmann::json links = nlohmann::json::array();
  if (!served.workers) {
    placement.push_back({{"device", "this device"},
                         {"first_layer", 0},
                         {"end_layer", served.model->config().n_layer}});
    return {{"placement", placement}, {"links", links}, {"description", ""}};
  }
  const ShardTopology::View v = served.workers->topology->view();
  for (const ShardPlacement& p : v.placement) {
    placement.push_back({{"device", p.device},
                         {"first_layer", p.first_layer},
                         {"end_layer", p.end_layer},
                         {"slice", p.slice}});
  }
  for (const auto& link : v.links) {
    const ShardLinkStats s = link->link_stats();
    links.push_back({{"address", s.address},
                     {"first_layer", s.first_layer},
                     {"end_layer", s.end_layer},
                     {"connected", s.connected},
                     {"steps", s.steps},
                     {"sessions", s.sessions},
                     {"failures", s.failures},
                     {"bytes_sent", s.bytes_sent},
                     {"bytes_received", s.bytes_received},
                     {"worker_ms", s.worker_ms},
                     {"wall_ms", s.wall_ms},
                     {"worker_kv_bytes", s.worker_kv_bytes},
                     {"last_error", s.last_error}});
  }
  return {{"placement", placement},
          {"links", links},
          {"description", v.description},
          {"replans", v.replans},
          {"devices_down", v.devices_down}};
}

}  // namespace sparrow::server
