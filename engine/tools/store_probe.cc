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

// The median of `reps` decodes of `tokens` (after a warm-up), with the plan's FFN: the store's
// runs spread more than the mapped ones, and a best-of would keep its luckiest.
Result<Timing> TimeDecode(const Model& model, std::shared_ptr<const SparsePlan> plan,
                          kernels::ThreadPool* pool, const std::vector<int32_t>& tokens, int reps) {
  const ModelConfig& c = model.config();
  ForwardPass fp(model, pool, MakeFeedForward(model, plan, pool));
  std::vector<float> logits;
  Timing t;
  std::vector<double> per_token;
  for (int rep = 0; rep <= reps; ++rep) {
    ContiguousKvCache cache(c.n_layer, static_cast<int64_t>(tokens.size()), c.kv_dim());
    const FfnCounters before = fp.ffn().counters();
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < tokens.size(); ++i) {
      SPARROW_RETURN_IF_ERROR(
          fp.Run({&tokens[i], 1}, static_cast<int64_t>(i), cache, false, &logits));
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rep == 0) continue;
    per_token.push_back(s / static_cast<double>(tokens.size()));
    t.neurons_per_token =
        static_cast<double>(fp.ffn().counters().neurons_computed - before.neurons_computed) /
        static_cast<double>(tokens.size());
  }
  std::sort(per_token.begin(), per_token.end());
  t.seconds_per_token = per_token[per_token.size() / 2];
  return t;
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

  SPARROW_ASSIGN_OR_RETURN(Timing m, TimeDecode(*model, mapped_plan, &pool, tokens, o.reps));
  SPARROW_ASSIGN_OR_RETURN(Timing s, TimeDecode(*model, store_plan, &pool, tokens, o.reps));
  StoreProbeResult r;
  r.mapped_s_per_token = m.seconds_per_token;
  r.store_s_per_token = s.seconds_per_token;
  r.neurons_per_token = s.neurons_per_token;
  if (r.neurons_per_token > 0) {
    r.seconds_per_neuron =
        std::max(0.0, (r.store_s_per_token - r.mapped_s_per_token) / r.neurons_per_token);
  }
  return r;
}

}  // namespace sparrow::tools
