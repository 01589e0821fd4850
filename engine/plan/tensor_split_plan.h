#pragma once
// Galaxy's tensor split placed (Ye et al. 2024): every device computes a slice of every layer,
// its share of the attention heads and FFN neurons in proportion to its measured speed, and the
// coordinator adds the slices' partial sums twice per layer (after attention, after the FFN).
// Per token that costs the slowest device's share of the compute plus, per layer, two exchanges
// with each worker (its round trip, the normed input there and the partial sum back): the split
// wins over the pipeline when the devices' compute outweighs those 2 * n_layer round trips. A
// pure function; thread-safe.
#include <span>

#include "engine/common/result.h"
#include "engine/model/model.h"
#include "engine/plan/shard_planner.h"

namespace sparrow {

// One range per device with a non-empty slice (the whole model, device 0 first), each with its
// predicted compute and link time per token and its bytes; token_ms and bottleneck_ms are the
// slowest device's. Unsupported when the model's layers cannot be cut (TensorSplitGrain);
// ResourceExhausted naming the device whose slice does not fit its memory; InvalidArgument for
// malformed devices (as PlanShards).
Result<ShardPlan> PlanTensorSplit(const Model& model, const ShardModelCost& cost,
                                  std::span<const ShardDevice> devices);

}  // namespace sparrow
