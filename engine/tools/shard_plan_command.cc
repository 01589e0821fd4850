#include "engine/tools/shard_plan_command.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "engine/kernels/thread_pool.h"
#include "engine/memory/device_memory.h"
#include "engine/model/model.h"
#include "engine/plan/shard_planner.h"
#include "engine/plan/tensor_split_plan.h"
#include "engine/shard/layer_profile.h"

namespace sparrow::tools {
namespace {

// "phone:1536:0.5:300:4" -> a device whose layers take this device's time / 0.5.
Result<ShardDevice> ParseDevice(const std::string& text, const std::vector<double>& here_ms) {
  std::vector<std::string> f;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ':');) f.push_back(item);
  const std::string usage = "--device '" + text +
                            "' must be NAME:MEM_MIB[:SPEED[:MBIT[:RTT_MS]]] (SPEED relative to "
                            "this device, 1 = as fast)";
  if (f.size() < 2 || f.size() > 5 || f[0].empty()) return InvalidArgument(usage);
  double v[4] = {0, 1, 100, 1};  // MiB, speed, Mbit/s, ms
  for (size_t i = 1; i < f.size(); ++i) {
    auto [p, ec] = std::from_chars(f[i].data(), f[i].data() + f[i].size(), v[i - 1]);
    if (ec != std::errc() || p != f[i].data() + f[i].size() || !(v[i - 1] > 0)) {
      return InvalidArgument(usage + "; '" + f[i] + "' is not a positive number");
    }
  }
  ShardDevice d;
  d.name = f[0];
  d.memory_bytes = static_cast<int64_t>(v[0] * 1048576.0);
  for (double ms : here_ms) d.layer_ms.push_back(ms / v[1]);
  d.link_mbps = v[2];
  d.rtt_ms = v[3];
  return d;
}

}  // namespace

void RegisterShardPlanCommand(CLI::App& app, ShardPlanOptions& opts, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "shard-plan",
      "Where a model's layers would go across devices (EdgeShard's planner, as sparrowd "
      "--workers places them), from this device's measured layer times");
  cmd->add_option("-m,--model", opts.model, "GGUF model file")->required();
  cmd->add_option("--device", opts.devices,
                  "A helper device, NAME:MEM_MIB[:SPEED[:MBIT[:RTT_MS]]]: memory for its layers, "
                  "speed relative to this device (default 1), link Mbit/s (100) and round trip "
                  "ms (1); repeat for each")
      ->required();
  cmd->add_option("--memory-mb", opts.memory_mb,
                  "This device's memory for layers in MiB (default: 90% of its limit)");
  cmd->add_option("--objective", opts.objective,
                  "latency (least time per token) or throughput (least time of the slowest "
                  "stage, for pipelined requests)")
      ->check(CLI::IsMember({"latency", "throughput"}));
  cmd->add_option("-c,--n-ctx", opts.n_ctx, "Context whose KV each layer must hold")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  cmd->add_option("-t,--threads", opts.threads, "Threads for timing the layers (0: all)");
  cmd->add_option("--encoding", opts.encoding, "Hidden states on the wire: f32, f16 or q8_0")
      ->check(CLI::IsMember({"f32", "f16", "q8_0"}));
  cmd->add_option("--split", opts.split,
                  "layers: runs of whole layers per device (a pipeline); tensor: every device a "
                  "slice of every layer (as sparrowd --shard-split)")
      ->check(CLI::IsMember({"layers", "tensor"}));
  cmd->add_flag("--json", opts.json, "Print the plan as JSON");
  AddKvTypeFlags(cmd, opts.kv);
  cmd->callback([&opts, &exit_code] { exit_code = RunShardPlan(opts); });
}

int RunShardPlan(const ShardPlanOptions& opts) {
  auto model = Model::Load(opts.model);
  if (!model.ok()) {
    std::fprintf(stderr, "sparrow shard-plan: %s\n", model.status().ToString().c_str());
    return 1;
  }
  auto kv_types = ParseKvTypeFlags(opts.kv, (*model)->config().head_dim);
  if (!kv_types.ok()) {
    std::fprintf(stderr, "sparrow shard-plan: %s\n", kv_types.status().message().c_str());
    return 2;
  }
  const int threads = opts.threads > 0
                          ? opts.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  kernels::ThreadPool pool(threads);
  std::vector<ShardDevice> devices(1);
  devices[0].name = "this device";
  devices[0].layer_ms = ProfileLayerDecodeMs(**model, &pool);
  devices[0].memory_bytes = opts.memory_mb > 0
                                ? static_cast<int64_t>(opts.memory_mb * 1048576.0)
                                : static_cast<int64_t>(DeviceMemoryLimit() / 100 * 90);
  for (const std::string& text : opts.devices) {
    auto d = ParseDevice(text, devices[0].layer_ms);
    if (!d.ok()) {
      std::fprintf(stderr, "sparrow shard-plan: %s\n", d.status().message().c_str());
      return 2;
    }
    devices.push_back(*d);
  }
  const ShardModelCost cost = ModelShardCost(**model, opts.n_ctx,
                                             opts.encoding == "f16"    ? 2
                                             : opts.encoding == "q8_0" ? 34.0 / 32
                                                                       : 4,
                                             *kv_types);
  const auto objective =
      opts.objective == "throughput" ? ShardObjective::kThroughput : ShardObjective::kLatency;
  const bool tensor = opts.split == "tensor";
  auto plan =
      tensor ? PlanTensorSplit(**model, cost, devices) : PlanShards(cost, devices, objective);
  // The other split's prediction, for the comparison (absent when it cannot be made).
  auto other =
      tensor ? PlanShards(cost, devices, objective) : PlanTensorSplit(**model, cost, devices);
  if (!plan.ok()) {
    std::fprintf(stderr, "sparrow shard-plan: %s\n", plan.status().message().c_str());
    return 1;
  }
  if (opts.json) {
    nlohmann::json ranges = nlohmann::json::array();
    for (const ShardRange& r : plan->ranges) {
      ranges.push_back({{"device", devices[static_cast<size_t>(r.device)].name},
                        {"first_layer", r.first},
                        {"end_layer", r.end},
                        {"compute_ms", r.compute_ms},
                        {"transfer_ms", r.transfer_ms},
                        {"bytes", r.bytes}});
      if (r.slice) {
        ranges.back()["slice"] = {{"kv_head_begin", r.slice->kv_head_begin},
                                  {"kv_head_end", r.slice->kv_head_end},
                                  {"ff_begin", r.slice->ff_begin},
                                  {"ff_end", r.slice->ff_end}};
      }
    }
    const nlohmann::json out = {
        {"ranges", ranges}, {"token_ms", plan->token_ms}, {"bottleneck_ms", plan->bottleneck_ms}};
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("%s", DescribeShardPlan(*plan, devices).c_str());
  std::printf(
      "per token %.2f ms (%.2f tokens/s one at a time); slowest stage %.2f ms (%.2f "
      "tokens/s pipelined)\n",
      plan->token_ms, 1000.0 / plan->token_ms, plan->bottleneck_ms, 1000.0 / plan->bottleneck_ms);
  if (other.ok()) {
    std::printf(
        "%s would take %.2f ms per token (%.2f tokens/s one at a time)\n",
        tensor ? "whole layers per device (--split layers)" : "a tensor split (--split tensor)",
        other->token_ms, 1000.0 / other->token_ms);
  } else {
    std::printf("%s: %s\n", tensor ? "whole layers per device" : "no tensor split",
                other.status().message().c_str());
  }
  return 0;
}

}  // namespace sparrow::tools
