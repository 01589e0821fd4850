#pragma once
// `sparrow shard-plan`: where EdgeShard's planner would put a model's layers on devices the user
// describes (memory, speed relative to this one, link), from this device's measured layer times;
// the same planner sparrowd --workers runs on measured devices, or (--split tensor) the tensor
// split's slices. Prints the plan and the other split's predicted time per token, or one line
// naming the constraint that cannot be met.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/tools/kv_type_flags.h"

namespace CLI {
class App;
}

namespace sparrow::tools {

struct ShardPlanOptions {
  std::string model;
  double memory_mb = 0;              // this device's memory for layers (0: 90% of its limit)
  std::vector<std::string> devices;  // NAME:MEM_MIB[:SPEED[:MBIT[:RTT_MS]]]
  std::string objective = "latency";
  int64_t n_ctx = 2048;
  int threads = 0;
  std::string encoding = "f32";
  std::string split = "layers";  // layers (EdgeShard's ranges) | tensor (Galaxy's slices)
  bool json = false;
  KvTypeFlags kv;  // the KV pool's types, which size each layer's KV
};

void RegisterShardPlanCommand(CLI::App& app, ShardPlanOptions& opts, int& exit_code);
int RunShardPlan(const ShardPlanOptions& opts);

}  // namespace sparrow::tools
