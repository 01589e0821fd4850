#include "engine/tools/sparsity_flags.h"

#include <CLI/CLI.hpp>

namespace sparrow::tools {

void AddSparsityFlags(CLI::App* cmd, SparsityFlags& f) {
  cmd->add_option("--sparsity", f.sparsity,
                  "Share of FFN neurons skipped per decoded token (0 = dense); needs --profile")
      ->check(CLI::Range(0.0, 0.99))
      ->capture_default_str();
  cmd->add_option("--profile", f.profile,
                  "The model's activation profile (sparrow profile), for --sparsity");
  cmd->add_option("--sparsity-method", f.method,
                  "cats: skip up/down rows by |silu(gate)|; teal-down: skip down rows by |h|; "
                  "predictor: the profile's trained predictor (sparrow profile --train-predictor)")
      ->check(CLI::IsMember({"cats", "teal-down", "predictor"}))
      ->capture_default_str();
  cmd->add_option("--sparse-down-type", f.down_type,
                  "Type of the transposed down projection built for --sparsity (auto: the "
                  "model's own for q4_0..q8_0, q8_0 for K-quants)")
      ->check(CLI::IsMember({"auto", "f32", "f16", "q8_0", "q5_0", "q4_0"}))
      ->capture_default_str();
  cmd->add_option("--sparse-gather-max", f.gather_max_tokens,
                  "Decode steps of up to this many sequences read each one's rows; larger ones "
                  "read whole matrices, masked")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20))
      ->capture_default_str();
  cmd->add_option("--sparse-dense-down-min", f.dense_down_min_tokens,
                  "Steps of at least this many sparse tokens take the down projection of their "
                  "masked activations by the whole matrix (0: never)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20))
      ->capture_default_str();
  cmd->add_option("--cache-mb", f.cache_mb,
                  "On a converted file (sparrow convert): keep the FFN on flash and this many MiB "
                  "of neurons in memory (hot neurons plus a cache); unset: map the whole file")
      ->check(CLI::Range(0.0, 1e9));
  // The same name as sparrowd's cache_hot_percent; --cache-hot-share (0..1) stays for scripts.
  cmd->add_option_function<double>(
         "--cache-hot-percent", [&f](double percent) { f.hot_share = percent / 100; },
         "Percent of --cache-mb preloaded with each layer's hottest neurons; the rest is a "
         "two-queue LRU cache (default: " +
             std::to_string(static_cast<int>(f.hot_share * 100)) + ")")
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--cache-hot-share", f.hot_share, "--cache-hot-percent as a share of 1")
      ->check(CLI::Range(0.0, 1.0))
      ->group("");  // not listed: the older name
  cmd->add_option("--io-depth", f.io_depth,
                  "Flash reads in flight at once under --cache-mb (io_uring; 1: one pread at a "
                  "time)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_flag("--no-read-ahead", f.no_read_ahead,
                "Mixture-of-experts files under --cache-mb: do not read the next layer's likely "
                "experts (its router on this layer's hidden state) while this layer computes");
}

Result<std::shared_ptr<const SparsePlan>> MakePlanFromFlags(const Model& model,
                                                            const SparsityFlags& f,
                                                            kernels::ThreadPool* pool,
                                                            bool sparse_prompts) {
  SparsityOptions o;
  o.sparse_prompts = sparse_prompts;
  o.gather_max_tokens = f.gather_max_tokens;
  o.dense_down_min_tokens = f.dense_down_min_tokens;
  o.sparsity = f.sparsity;
  o.profile_path = f.profile;
  o.method = f.method == "teal-down"   ? ThresholdMethod::kTealDown
             : f.method == "predictor" ? ThresholdMethod::kPredictor
                                       : ThresholdMethod::kCats;
  const std::pair<const char*, TensorType> types[] = {{"f32", TensorType::kF32},
                                                      {"f16", TensorType::kF16},
                                                      {"q8_0", TensorType::kQ8_0},
                                                      {"q5_0", TensorType::kQ5_0},
                                                      {"q4_0", TensorType::kQ4_0}};
  for (const auto& [name, type] : types) {
    if (f.down_type == name) o.down_type = type;
  }
  if (f.cache_mb >= 0) o.cache_bytes = static_cast<size_t>(f.cache_mb * 1024 * 1024);
  o.store.hot_share = f.hot_share;
  o.store.queue_depth = f.io_depth;
  o.store.read_ahead = !f.no_read_ahead;
  return MakeSparsePlan(model, o, pool);
}

nlohmann::json SparseReport(const FeedForward& ffn, const SparsePlan* plan) {
  const FfnCounters c = ffn.counters();
  nlohmann::json j;
  j["mode"] = std::string(ffn.mode());
  j["active_fraction"] = c.neurons_total > 0 ? static_cast<double>(c.neurons_computed) /
                                                   static_cast<double>(c.neurons_total)
                                             : 1.0;
  if (plan && plan->policy != SparsePolicy::kPredictor && plan->policy != SparsePolicy::kExperts)
    j["target"] = plan->target_sparsity;
  if (plan && plan->store) j["cache"] = NeuronCacheReport(plan->store->stats());
  return j;
}

nlohmann::json NeuronCacheReport(const NeuronStoreStats& s) {
  nlohmann::json j;
  const int64_t used = s.hot_hits + s.cache.hits + s.cache.misses;
  j["capacity_bytes"] = s.capacity_bytes;
  j["resident_bytes"] = s.held_bytes();
  j["hot_bytes"] = s.hot_bytes;
  j["hot_share"] = s.hot_share;
  j["hot_hits"] = s.hot_hits;
  j["hits"] = s.cache.hits;
  j["misses"] = s.cache.misses;
  j["hit_rate"] = used > 0 ? static_cast<double>(s.hot_hits + s.cache.hits) / used : 0.0;
  j["evictions"] = s.cache.evictions;
  j["bypassed"] = s.cache.bypassed;
  j["layer_reads"] = s.layer_reads;
  j["flash_wait_us"] = s.wait_micros;
  j["staging_bytes"] = s.staging_bytes;
  j["flash_reads"] = s.reads.reads;
  j["flash_bytes"] = s.reads.bytes;
  j["failed_reads"] = s.reads.failed_reads;
  j["prefetch_reads"] = s.prefetch_reads;
  j["prefetch_used"] = s.prefetch_used;
  j["direct_io"] = s.direct;
  j["read_backend"] = std::string(s.read_backend);
  nlohmann::json hist = nlohmann::json::array();
  for (size_t b = 0; b < s.reads.latency.size(); ++b) {
    nlohmann::json bucket;
    if (b < BundleReadStats::kBucketMicros.size()) {
      bucket["le_us"] = BundleReadStats::kBucketMicros[b];
    } else {
      bucket["le_us"] = "inf";
    }
    bucket["count"] = s.reads.latency[b];
    hist.push_back(bucket);
  }
  j["read_latency"] = hist;
  return j;
}

}  // namespace sparrow::tools
