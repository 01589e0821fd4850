#pragma once
// The sparsity flags every command that runs a model shares (--sparsity, --profile,
// --sparsity-method), turning them into the FFN the forward pass runs, and the "sparse" object of
// their --json output.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/common/result.h"
#include "engine/model/model.h"
#include "engine/runtime/feed_forward.h"
#include "engine/sparse/sparse_plan.h"

namespace CLI {
class App;
}

namespace sparrow::tools {

struct SparsityFlags {
  double sparsity = 0;
  std::string profile;
  std::string method = "cats";
  std::string down_type = "auto";
  int64_t gather_max_tokens = 1;
  int64_t dense_down_min_tokens = 2;
  double cache_mb = -1;  // --cache-mb; negative: unset (the whole file mapped)
  double hot_share = 0.5;
  int io_depth = 128;
  bool no_read_ahead = false;  // --no-read-ahead: MoE files read no expert on a guess
};

void AddSparsityFlags(CLI::App* cmd, SparsityFlags& flags);

// Null for a dense run (sparsity 0 on an ordinary GGUF). Errors name the flag or the file.
// sparse_prompts: prompt tokens run sparse too (perplexity scores every token as if decoded).
Result<std::shared_ptr<const SparsePlan>> MakePlanFromFlags(const Model& model,
                                                            const SparsityFlags& flags,
                                                            kernels::ThreadPool* pool,
                                                            bool sparse_prompts = false);

// {"mode": "dense" | "cats" | "teal-down" | "predictor", "active_fraction": share of FFN neurons
// computed per decoded token (1 when dense), "target": asked-for sparsity (threshold modes),
// "cache": NeuronCacheReport (under --cache-mb)}.
nlohmann::json SparseReport(const FeedForward& ffn, const SparsePlan* plan);

// The neuron store's counters: hits and misses (hot segment, cache), bytes and reads from flash,
// evictions, resident bytes, the read latency histogram.
nlohmann::json NeuronCacheReport(const NeuronStoreStats& s);

}  // namespace sparrow::tools
