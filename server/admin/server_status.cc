#include "server/admin/server_status.h"

#include <spdlog/spdlog.h>

#include "config/version.h"
#include "engine/memory/device_memory.h"
#include "engine/tokenizer/unicode.h"

namespace sparrow::server {
namespace {

void SetPercentiles(const Percentiles& p, adminpb::Percentiles* out) {
  out->set_p50(p.p50);
  out->set_p90(p.p90);
  out->set_p99(p.p99);
  out->set_count(static_cast<int64_t>(p.count));
}

// Proto strings must be UTF-8; a detokenized prompt may end inside a character.
std::string ValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const uint32_t cpt : tokenizer::DecodeUtf8Lossy(text)) {
    tokenizer::AppendUtf8(cpt >= 0xD800 && cpt <= 0xDFFF ? tokenizer::kReplacementChar : cpt, &out);
  }
  return out;
}

void SetConsumers(const MemorySplit& split, adminpb::MemoryConsumers* out) {
  out->set_process_bytes(split.baseline);
  out->set_weights_bytes(split.weights);
  out->set_scratch_bytes(split.scratch);
  out->set_kv_pool_bytes(split.kv_pool);
  out->set_neuron_cache_bytes(split.neuron_cache);
}

}  // namespace

adminpb::ModelStatus DescribeModel(const ServedModel& served) {
  adminpb::ModelStatus m;
  const GgufFile& f = served.model->file();
  m.set_id(served.model_id);
  m.set_file(f.path().substr(f.path().find_last_of('/') + 1));
  m.set_file_bytes(static_cast<int64_t>(f.file_size()));
  const ArchSpec* arch = served.model->config().arch;
  m.set_architecture(arch ? std::string(arch->name) : "");
  m.set_n_ctx(served.n_ctx);
  auto& types = *m.mutable_tensor_types();
  for (const auto& t : f.tensors()) ++types[std::string(TensorTypeName(t.type))];
  return m;
}

adminpb::NeuronCacheStatus NeuronCacheStatusOf(const NeuronStoreStats& store) {
  adminpb::NeuronCacheStatus c;
  c.set_capacity_bytes(static_cast<int64_t>(store.capacity_bytes));
  c.set_resident_bytes(static_cast<int64_t>(store.held_bytes()));
  c.set_lookups(store.hot_hits + store.cache.hits + store.cache.misses);
  c.set_hits(store.hot_hits + store.cache.hits);
  // A rate of nothing is not a rate of 0.
  if (c.lookups() > 0) {
    c.set_hit_rate(static_cast<double>(c.hits()) / static_cast<double>(c.lookups()));
  }
  return c;
}

adminpb::RequestInfo DescribeRequest(const RequestSnapshot& r,
                                     const Tokenizer* tokenizer_for_prompt) {
  adminpb::RequestInfo out;
  out.set_id(r.id);
  out.set_frontend(r.frontend);
  out.set_route(r.route);
  out.set_remote(r.remote);
  out.set_key_id(r.key_id);
  out.set_state(r.state);
  out.set_age_ms(r.age_ms);
  out.set_stream(r.stream);
  out.set_n(r.n);
  out.set_prompt_tokens(r.prompt_tokens);
  out.set_generated_tokens(r.generated_tokens);
  out.set_max_tokens(r.max_tokens);
  out.set_cancelling(r.cancelling);
  if (tokenizer_for_prompt) {
    out.set_prompt(ValidUtf8(tokenizer_for_prompt->Detokenize(r.prompt, false, true)));
  }
  return out;
}

adminpb::ServerStatus CollectStatus(const ServerContext& ctx, const adminpb::ModelStatus& model) {
  adminpb::ServerStatus s;
  s.set_version(kSparrowVersion);
  *s.mutable_model() = model;
  s.set_uptime_s(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - ctx.started).count());
  // Null while the model sleeps (sleep_idle_seconds): no threads, nothing running, no KV.
  const std::shared_ptr<ServedModel> served = ctx.served();
  s.set_threads(served && served->pool ? served->pool->size() : 0);
  const auto level = spdlog::level::to_string_view(spdlog::get_level());
  s.set_log_level(std::string(level.data(), level.size()));
  const SchedulerStats st = served ? served->scheduler->Stats() : SchedulerStats{};
  s.set_running(st.running);
  s.set_waiting(st.waiting);
  s.set_draining(ctx.draining.load());
  const std::vector<RequestSnapshot> requests = ctx.requests.List(false);
  for (const auto& r : requests) *s.add_requests() = DescribeRequest(r, nullptr);
  s.set_drained(s.draining() && st.running == 0 && st.waiting == 0 && requests.empty());

  adminpb::Throughput* t = s.mutable_throughput();
  t->set_generated_tokens(st.generated_tokens);
  t->set_prompt_tokens(st.prompt_tokens);
  t->set_requests_finished(st.requests_finished);
  t->set_requests_cancelled(st.requests_cancelled);
  t->set_requests_failed(st.requests_failed);
  SetPercentiles(ctx.metrics.RecentTtft(std::chrono::seconds(60)),
                 s.mutable_latency()->mutable_ttft_ms());
  SetPercentiles(ctx.metrics.RecentTbt(std::chrono::seconds(60)),
                 s.mutable_latency()->mutable_tbt_ms());

  adminpb::KvStatus* kv = s.mutable_kv();
  kv->set_blocks_total(st.kv.total_blocks);
  kv->set_blocks_used(st.kv.used_blocks);
  kv->set_blocks_cached(st.kv.cached_blocks);
  kv->set_blocks_free(st.kv.free_blocks);
  kv->set_block_size(served ? served->scheduler->options().kv_block_size : 0);
  kv->set_prefix_hit_rate(st.kv.prefix_lookups > 0 ? static_cast<double>(st.kv.prefix_hits) /
                                                         static_cast<double>(st.kv.prefix_lookups)
                                                   : 0.0);

  adminpb::SparseStatus* sparse = s.mutable_sparse();
  sparse->set_mode(std::string(st.ffn_mode));
  sparse->set_active_fraction(st.ffn.neurons_total > 0
                                  ? static_cast<double>(st.ffn.neurons_computed) /
                                        static_cast<double>(st.ffn.neurons_total)
                                  : 1.0);
  if (st.neuron_cache) *sparse->mutable_neuron_cache() = NeuronCacheStatusOf(*st.neuron_cache);

  adminpb::SpeculativeStatus* spec = s.mutable_speculative();
  const SpecOptions spec_options = served ? served->scheduler->options().spec : SpecOptions{};
  spec->set_type(SpecTypeName(spec_options.type));
  spec->set_draft_max(spec_options.draft_max);
  for (int k = 0; k < kDraftSources; ++k) {
    adminpb::SpeculativeSource* src = spec->add_sources();
    src->set_source(DraftSourceName(static_cast<DraftSource>(k)));
    src->set_drafted_tokens(st.spec_drafted[k]);
    src->set_accepted_tokens(st.spec_accepted[k]);
    if (st.spec_drafted[k] > 0) {
      src->set_acceptance(static_cast<double>(st.spec_accepted[k]) /
                          static_cast<double>(st.spec_drafted[k]));
    }
  }
  spec->set_draft_kv_bytes(st.spec_kv_bytes);

  adminpb::MemoryStatus* mem = s.mutable_memory();
  mem->set_rss_bytes(static_cast<int64_t>(ProcessResidentBytes()));
  if (served && served->memory) {
    const MemoryGovernorStats m = served->memory->stats();
    mem->set_budget_bytes(static_cast<int64_t>(m.budget_bytes));
    mem->set_ceiling_bytes(static_cast<int64_t>(m.ceiling_bytes));
    mem->set_floor_bytes(static_cast<int64_t>(m.floor_bytes));
    if (m.operator_budget_bytes) {
      mem->set_operator_budget_bytes(static_cast<int64_t>(*m.operator_budget_bytes));
    }
    mem->set_held_bytes(static_cast<int64_t>(m.held.total()));
  }
  return s;
}

adminpb::MemoryBudget DescribeMemory(const MemoryGovernorStats& m, const SchedulerStats& s) {
  adminpb::MemoryBudget out;
  out.set_budget_bytes(m.budget_bytes);
  out.set_ceiling_bytes(m.ceiling_bytes);
  out.set_floor_bytes(m.floor_bytes);
  SetConsumers(m.split, out.mutable_consumers());
  SetConsumers(m.held, out.mutable_held());
  out.set_held_bytes(m.held.total());
  out.set_rss_bytes(m.rss_bytes);
  adminpb::KvPoolOccupancy* kv = out.mutable_kv_pool();
  kv->set_blocks(s.kv.total_blocks);
  kv->set_used_blocks(s.kv.used_blocks);
  kv->set_mapped_bytes(s.kv.mapped_bytes);
  if (m.operator_budget_bytes) out.set_operator_budget_bytes(*m.operator_budget_bytes);
  out.set_pressure_level(std::string(PressureLevelName(m.level)));
  out.set_starved(m.starved);
  out.set_plan_version(m.plan_version);
  out.set_applied_plan_version(s.memory_plan_version);
  out.set_replan_latency_ms(s.memory_plan_latency_ms);
  out.set_shrinks(m.shrinks);
  out.set_grows(m.grows);
  out.set_operator_changes(m.operator_changes);
  for (const std::string& src : m.sources) out.add_sources(src);
  if (m.run_plan) {
    const plan::RunPlan& r = *m.run_plan;
    adminpb::RunPlan* p = out.mutable_plan();
    p->set_threads(r.threads);
    p->set_neuron_cache_bytes(r.neuron_cache_bytes);
    p->set_kv_pool_bytes(r.kv_pool_bytes);
    p->set_sparsity(r.sparsity);
    p->set_predicted_tokens_per_s(r.predicted_tokens_per_s);
    p->set_memory_bytes(r.memory_bytes);
    for (const auto& b : r.binding) p->add_binding(b);
    p->set_solve_ms(r.solve_ms);
  }
  out.set_plan_error(m.plan_error);
  // The level in force, which the plan's may differ from (a level the server may not run at).
  if (s.sparsity) out.set_sparsity(*s.sparsity);
  if (s.neuron_cache) {
    out.mutable_neuron_cache()->set_capacity_bytes(s.neuron_cache->capacity_bytes);
    out.mutable_neuron_cache()->set_resident_bytes(s.neuron_cache->held_bytes());
  }
  return out;
}

adminpb::Shards DescribeShards(const ServerContext& ctx) {
  const std::shared_ptr<ServedModel> served = ctx.served();
  return served ? DescribeShards(*served) : adminpb::Shards{};
}

adminpb::Shards DescribeShards(const ServedModel& served) {
  adminpb::Shards out;
  if (!served.workers) {
    adminpb::ShardPlacement* p = out.add_placement();
    p->set_device("this device");
    p->set_first_layer(0);
    p->set_end_layer(served.model->config().n_layer);
    return out;
  }
  const ShardTopology::View v = served.workers->topology->view();
  for (const ShardPlacement& p : v.placement) {
    adminpb::ShardPlacement* q = out.add_placement();
    q->set_device(p.device);
    q->set_first_layer(p.first_layer);
    q->set_end_layer(p.end_layer);
    q->set_slice(p.slice);
  }
  for (const auto& link : v.links) {
    const ShardLinkStats s = link->link_stats();
    adminpb::ShardLink* l = out.add_links();
    l->set_address(s.address);
    l->set_first_layer(s.first_layer);
    l->set_end_layer(s.end_layer);
    l->set_connected(s.connected);
    l->set_steps(s.steps);
    l->set_sessions(s.sessions);
    l->set_failures(s.failures);
    l->set_bytes_sent(s.bytes_sent);
    l->set_bytes_received(s.bytes_received);
    l->set_worker_ms(s.worker_ms);
    l->set_wall_ms(s.wall_ms);
    l->set_worker_kv_bytes(s.worker_kv_bytes);
    l->set_last_error(s.last_error);
  }
  out.set_description(v.description);
  out.set_replans(v.replans);
  for (const auto& d : v.devices_down) out.add_devices_down(d);
  return out;
}

}  // namespace sparrow::server
