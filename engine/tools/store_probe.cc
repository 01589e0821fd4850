#include "engine/tools/store_probe.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "engine/kernels/thread_pool.h"
#include "engine/model/model.h"
#include "engine/runtime/forward_pass.h"
#include "engine/runtime/kv_cache.h"
#include "engine/sparse/sparse_plan.h"

namespace sparrow::tools {
namespace {

struct Timing {
  double seconds_per_token = 0;
  double neurons_per_token = 0;
};

// One decode of `tokens` from position 0.
Result<Timing> Decode(ForwardPass& fp, const ModelConfig& c, const std::vector<int32_t>& tokens) {
  std::vector<float> logits;
  ContiguousKvCache cache(c.n_layer, static_cast<int64_t>(tokens.size()), c.kv_dim());
  const FfnCounters before = fp.ffn().counters();
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < tokens.size(); ++i) {
    SPARROW_RETURN_IF_ERROR(
        fp.Run({&tokens[i], 1}, static_cast<int64_t>(i), cache, false, &logits));
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Timing t;
  t.seconds_per_token = s / static_cast<double>(tokens.size());
  t.neurons_per_token =
      static_cast<double>(fp.ffn().counters().neurons_computed - before.neurons_computed) /
      static_cast<double>(tokens.size());
  return t;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

Result<StoreProbeResult> MeasureStoreOverhead(const StoreProbeOptions& o) {
  if (o.tokens < 1 || o.reps < 1) return InvalidArgument("store probe: tokens and reps >= 1");
  SPARROW_ASSIGN_OR_RETURN(auto model, Model::Load(o.model));
  const NeuronBundleLayout* layout = model->weights().bundles.get();
  if (!layout) {
    return InvalidArgument(o.model + " is not converted (sparrow convert): it has no store");
  }
  const uint64_t bundles = layout->bundle_bytes();
  if (bundles > o.max_bundle_bytes) {
    return ResourceExhausted(o.model + ": its bundles take " + std::to_string(bundles >> 20) +
                             " MiB; the store probe holds them all and stops at " +
                             std::to_string(o.max_bundle_bytes >> 20));
  }
  const ModelConfig& c = model->config();
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> any(0, static_cast<int32_t>(c.n_vocab - 1));
  const int64_t n = std::min<int64_t>(o.tokens, std::max<int64_t>(1, c.n_ctx_train));
  std::vector<int32_t> tokens(static_cast<size_t>(n));
  for (int32_t& t : tokens) t = any(rng);

  kernels::ThreadPool pool(std::max(1, o.threads));
  SparsityOptions mapped;
  SPARROW_ASSIGN_OR_RETURN(auto mapped_plan, MakeSparsePlan(*model, mapped, &pool));
  SparsityOptions stored;
  stored.cache_bytes = static_cast<size_t>(bundles);
  // The store as it serves a full cache: the default hot share, the rest in the LRU's slots,
  // which the warm-up decode fills (a neuron the predictor chooses a quarter of the time is
  // left out of 64 tokens with odds of 1e-8). Every record in the hot segment ran faster than
  // that (bench/RESULTS.md), and the planner predicted the difference.
  stored.store.adaptive = false;
  SPARROW_ASSIGN_OR_RETURN(auto store_plan, MakeSparsePlan(*model, stored, &pool));

  // The two decode in turn, and the store's cost is the median of each pair's difference: a
  // shared machine's speed drifts by more than the difference over a few seconds, and timing
  // all of one and then all of the other took it for the store's (65 to 284 ns a neuron).
  ForwardPass mapped_fp(*model, &pool, MakeFeedForward(*model, mapped_plan, &pool));
  ForwardPass store_fp(*model, &pool, MakeFeedForward(*model, store_plan, &pool));
  std::vector<double> mapped_s, store_s, diff_s;
  StoreProbeResult r;
  for (int rep = 0; rep <= o.reps; ++rep) {  // rep 0 warms up (and fills the LRU's slots)
    SPARROW_ASSIGN_OR_RETURN(Timing m, Decode(mapped_fp, c, tokens));
    SPARROW_ASSIGN_OR_RETURN(Timing s, Decode(store_fp, c, tokens));
    if (rep == 0) continue;
    mapped_s.push_back(m.seconds_per_token);
    store_s.push_back(s.seconds_per_token);
    diff_s.push_back(s.seconds_per_token - m.seconds_per_token);
    r.neurons_per_token = s.neurons_per_token;
  }
  r.n_layer = c.n_layer;
  r.n_ff = c.n_ff;
  r.mapped_s_per_token = Median(mapped_s);
  r.store_s_per_token = Median(store_s);
  if (r.neurons_per_token > 0) {
    r.seconds_per_neuron = std::max(0.0, Median(diff_s) / r.neurons_per_token);
  }
  return r;
}

}  // namespace sparrow::tools
