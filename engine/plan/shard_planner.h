#pragma once
// EdgeShard's placement planner (Zhang et al. 2024) for collaborative inference: which device
// computes which contiguous range of a model's layers, from each device's measured layer times,
// memory and link to the coordinator. A pure function; thread-safe.
//
// The topology is a star: device 0 is the coordinator (it holds the embedding and output and
// sends the hidden state to each worker range and takes it back), so a range on worker d costs
//   rtt_ms(d) + 2 * activation_bytes * 8 / (link_mbps(d) * 1e6) * 1e3   of transfer
// plus its layers' layer_ms on d; a range on the coordinator costs only its compute. Each
// device holds at most one contiguous range (or none), and its layers' bytes (plus the fixed
// bytes on the coordinator) must fit its memory.
//   kLatency:    least token_ms = sum over ranges of (compute + transfer).
//   kThroughput: least bottleneck_ms = the slowest stage (compute + transfer of one device's
//                range), which sets a pipeline's pace; ties go to the lower token_ms.
// Of equally good plans, the one with the fewest ranges.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/common/result.h"
#include "engine/runtime/tensor_slice.h"

namespace sparrow {

// The DP keeps a table over every subset of devices: 2^16 subsets is the most we accept.
inline constexpr int kMaxShardDevices = 16;

struct ShardDevice {
  std::string name;              // "coordinator", "10.0.0.2:50061": for messages
  std::vector<double> layer_ms;  // each layer's time on this device for one decode token (ms)
  // Each layer's time per token of a prompt chunk (ms): shown to the operator; the planners
  // place by decode.
  std::vector<double> layer_prefill_ms;
  int64_t memory_bytes = 0;  // what this device may hold for its layers (weights + their KV)
  double link_mbps = 0;      // bandwidth of its link to the coordinator (ignored for device 0)
  double rtt_ms = 0;         // round trip to the coordinator (ignored for device 0)
};

struct ShardModelCost {
  std::vector<int64_t> layer_bytes;     // each layer's weights plus its KV at the planned context
  int64_t activation_bytes = 0;         // one token's hidden state as sent (n_embd * value bytes)
  int64_t coordinator_fixed_bytes = 0;  // embedding + output layer, always on device 0
};

enum class ShardObjective { kLatency, kThroughput };

struct ShardRange {
  int device = 0;
  int64_t first = 0, end = 0;  // layers [first, end)
  double compute_ms = 0;       // the range's layers on its device
  double transfer_ms = 0;      // the hidden state there and back (0 on the coordinator)
  int64_t bytes = 0;           // the range's layer_bytes (without the coordinator's fixed bytes)
  // Galaxy's tensor split (PlanTensorSplit): the device's slice of every layer of the range.
  std::optional<TensorSlice> slice;
};

struct ShardPlan {
  // In layer order, covering 0..n_layer exactly, each non-empty; in a tensor split, one per
  // device with a slice, each over the whole model.
  std::vector<ShardRange> ranges;
  double token_ms = 0;  // predicted per-token latency (compute + transfers)
  // The slowest stage (compute + its transfers): 1000 / bottleneck_ms tokens/s when pipelined.
  double bottleneck_ms = 0;
};

// The best placement for `objective`. InvalidArgument for malformed input (no devices, more
// than kMaxShardDevices, layer_ms of the wrong size, a worker without bandwidth), naming the
// device; ResourceExhausted when no placement fits, naming the bytes needed and offered or the
// layer that cannot be placed.
Result<ShardPlan> PlanShards(const ShardModelCost& model, std::span<const ShardDevice> devices,
                             ShardObjective objective);

// One line per range: "10.0.0.2:50061: layers 12..23 (12), 41.30 ms (40.10 compute + 1.20
// link), 1.45 GiB".
std::string DescribeShardPlan(const ShardPlan& plan, std::span<const ShardDevice> devices);

}  // namespace sparrow
