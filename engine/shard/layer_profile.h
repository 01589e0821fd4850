#pragma once
// ProfileLayerDecodeMs: how long each of a model's layers takes this device for one decoded
// token (median of three runs after one that warms the weights' pages; layers of the same bytes
// and attention kind are timed once): what EdgeShard's planner places layers by.
#include <cstdint>
#include <vector>

#include "engine/model/model.h"
#include "engine/plan/shard_planner.h"
#include "engine/runtime/kv_cache.h"

namespace sparrow {
namespace kernels {
class ThreadPool;
}

std::vector<double> ProfileLayerDecodeMs(const Model& model, kernels::ThreadPool* pool);
// The same per token of a prompt chunk of kPrefillProfileTokens (a batch reads the weights once
// for all its tokens, so this is what prompts cost per token).
inline constexpr int64_t kPrefillProfileTokens = 32;
std::vector<double> ProfileLayerPrefillMs(const Model& model, kernels::ThreadPool* pool);

// What the planner weighs a layer by: its weights (tensors blk.N.*) plus the keys and values of
// one full context of `n_ctx` positions in `kv_types` (the KV pool's floor); the rest of the
// file (embedding, output) is the coordinator's; `value_bytes` per hidden value on the wire.
ShardModelCost ModelShardCost(const Model& model, int64_t n_ctx, double value_bytes,
                              const KvTypes& kv_types = kF16Kv);

}  // namespace sparrow
