// PlanShards against a plain reference, every placement enumerated and costed layer by layer
// (llm.c's idea: the fast path and a readable one on the same random inputs), then cases whose
// answer is worked out by hand: links that cost more than they save, devices too small, models
// too big, one device, and the pipelined objective spreading the layers.
#include "engine/plan/shard_planner.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

namespace sparrow {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

struct Eval {
  bool valid = false;
  double token_ms = 0, bottleneck_ms = 0;
};

// The placement's cost as the header defines it, summed layer by layer; invalid unless the
// ranges cover the layers in order, each non-empty, each device once, each within its memory.
Eval Evaluate(const ShardModelCost& m, const std::vector<ShardDevice>& devs,
              const std::vector<ShardRange>& ranges) {
  Eval e;
  std::vector<bool> used(devs.size());
  int64_t at = 0;
  for (const ShardRange& r : ranges) {
    if (r.first != at || r.end <= r.first || used[r.device]) return e;
    used[r.device] = true;
    at = r.end;
    const ShardDevice& d = devs[r.device];
    int64_t bytes = r.device == 0 ? m.coordinator_fixed_bytes : 0;
    double ms =
        r.device == 0 ? 0 : d.rtt_ms + 2.0 * m.activation_bytes * 8 / (d.link_mbps * 1e6) * 1e3;
    for (int64_t l = r.first; l < r.end; ++l) ms += d.layer_ms[l], bytes += m.layer_bytes[l];
    if (bytes > d.memory_bytes) return e;
    e.token_ms += ms;
    e.bottleneck_ms = std::max(e.bottleneck_ms, ms);
  }
  e.valid = at == static_cast<int64_t>(m.layer_bytes.size());
  return e;
}

struct Candidate {
  Eval eval;
  size_t n_ranges = 0;
};

// Every placement: each next range takes an unused device and any non-empty run of layers.
void Enumerate(const ShardModelCost& m, const std::vector<ShardDevice>& devs,
               std::vector<ShardRange>& ranges, std::vector<Candidate>& out) {
  const int64_t n = static_cast<int64_t>(m.layer_bytes.size());
  const int64_t at = ranges.empty() ? 0 : ranges.back().end;
  if (at == n) {
    const Eval e = Evaluate(m, devs, ranges);
    if (e.valid) out.push_back({e, ranges.size()});
    return;
  }
  for (int d = 0; d < static_cast<int>(devs.size()); ++d) {
    bool used = false;
    for (const ShardRange& r : ranges) used = used || r.device == d;
    if (used) continue;
    for (int64_t end = at + 1; end <= n; ++end) {
      ShardRange& r = ranges.emplace_back();
      r.device = d;
      r.first = at;
      r.end = end;
      Enumerate(m, devs, ranges, out);
      ranges.pop_back();
    }
  }
}

struct Instance {
  ShardModelCost model;
  std::vector<ShardDevice> devices;
};

Instance RandomInstance(std::mt19937& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  Instance in;
  const int n = 3 + static_cast<int>(rng() % 6), n_dev = 2 + static_cast<int>(rng() % 3);
  int64_t total = 0;
  for (int i = 0; i < n; ++i) {
    in.model.layer_bytes.push_back(static_cast<int64_t>((100 + 200 * u(rng)) * kMiB));
    total += in.model.layer_bytes.back();
  }
  in.model.activation_bytes = 4096 * (1 + static_cast<int64_t>(rng() % 4));
  in.model.coordinator_fixed_bytes = static_cast<int64_t>((50 + 150 * u(rng)) * kMiB);
  for (int d = 0; d < n_dev; ++d) {
    ShardDevice dev;
    dev.name = d == 0 ? "coordinator" : "worker";
    if (d > 0) dev.name += std::to_string(d);
    const double speed = 0.5 + 4.5 * u(rng);  // ms per layer, give or take a fifth
    for (int i = 0; i < n; ++i) dev.layer_ms.push_back(speed * (0.8 + 0.4 * u(rng)));
    // From a layer or two to most of the model: some instances do not fit at all.
    dev.memory_bytes = static_cast<int64_t>(total * (0.1 + 0.8 * u(rng)));
    if (d == 0) dev.memory_bytes += in.model.coordinator_fixed_bytes;
    dev.link_mbps = 5 * std::pow(200.0, u(rng));  // 5 Mbit/s to 1 Gbit/s
    dev.rtt_ms = 10 * u(rng);
    in.devices.push_back(dev);
  }
  return in;
}

TEST(ShardPlannerReferenceTest, SameOptimumAsEnumeratingEveryPlacement) {
  int feasible = 0, infeasible = 0;
  for (uint32_t seed = 1; seed <= 400; ++seed) {
    std::mt19937 rng(seed);
    const Instance in = RandomInstance(rng);
    std::vector<ShardRange> scratch;
    std::vector<Candidate> all;
    Enumerate(in.model, in.devices, scratch, all);
    for (ShardObjective objective : {ShardObjective::kLatency, ShardObjective::kThroughput}) {
      const bool latency = objective == ShardObjective::kLatency;
      SCOPED_TRACE("seed " + std::to_string(seed) + (latency ? " latency" : " throughput"));
      auto plan = PlanShards(in.model, in.devices, objective);
      ASSERT_EQ(plan.ok(), !all.empty()) << (plan.ok() ? "planned" : plan.status().ToString());
      if (!plan.ok()) {
        EXPECT_EQ(plan.status().code(), StatusCode::kResourceExhausted);
        ++infeasible;
        continue;
      }
      ++feasible;
      // The reference's choice: the objective, then token_ms, then the fewest ranges.
      auto key = [&](const Candidate& c) {
        return latency ? c.eval.token_ms : c.eval.bottleneck_ms;
      };
      double best = std::numeric_limits<double>::infinity(), best_token = best;
      for (const Candidate& c : all) best = std::min(best, key(c));
      for (const Candidate& c : all) {
        if (key(c) <= best + 1e-9) best_token = std::min(best_token, c.eval.token_ms);
      }
      size_t fewest = std::numeric_limits<size_t>::max();
      for (const Candidate& c : all) {
        if (key(c) <= best + 1e-9 && c.eval.token_ms <= best_token + 1e-9) {
          fewest = std::min(fewest, c.n_ranges);
        }
      }
      const Eval got = Evaluate(in.model, in.devices, plan->ranges);
      ASSERT_TRUE(got.valid);
      EXPECT_NEAR(got.token_ms, plan->token_ms, 1e-9);
      EXPECT_NEAR(got.bottleneck_ms, plan->bottleneck_ms, 1e-9);
      EXPECT_NEAR(latency ? plan->token_ms : plan->bottleneck_ms, best, 1e-9);
      EXPECT_NEAR(plan->token_ms, best_token, 1e-9);
      EXPECT_EQ(plan->ranges.size(), fewest);
    }
  }
  // The random instances cover both outcomes.
  EXPECT_GT(feasible, 200);
  EXPECT_GT(infeasible, 50);
}

// Devices with `ms` per layer for n layers, roomy memory and a given link.
ShardDevice Device(std::string name, int n, double ms, double mbps = 1000, double rtt = 1) {
  ShardDevice d;
  d.name = std::move(name);
  d.layer_ms.assign(n, ms);
  d.memory_bytes = int64_t{1} << 40;
  d.link_mbps = mbps;
  d.rtt_ms = rtt;
  return d;
}

ShardModelCost Model(int n, int64_t layer_bytes = 100, int64_t activation = 4096) {
  ShardModelCost m;
  m.layer_bytes.assign(n, layer_bytes);
  m.activation_bytes = activation;
  return m;
}

TEST(ShardPlannerTest, FastWorkerBehindSlowLinkGetsNoLayers) {
  // 4 layers: 40 ms on the coordinator, 4 ms on the worker, whose link costs 5 ms of round trip
  // plus 2 * 4096 * 8 bits at 1 Mbit/s = 65.5 ms: more than the 36 ms it saves.
  std::vector<ShardDevice> devs = {Device("coordinator", 4, 10), Device("w", 4, 1, 1, 5)};
  auto plan = PlanShards(Model(4), devs, ShardObjective::kLatency);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->ranges.size(), 1u);
  EXPECT_EQ(plan->ranges[0].device, 0);
  EXPECT_NEAR(plan->token_ms, 40, 1e-9);
  // At 1 Gbit/s the link costs 5.07 ms and the worker takes every layer.
  devs[1].link_mbps = 1000;
  plan = PlanShards(Model(4), devs, ShardObjective::kLatency);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->ranges.size(), 1u);
  EXPECT_EQ(plan->ranges[0].device, 1);
  EXPECT_NEAR(plan->token_ms, 4 + 5 + 2 * 4096 * 8 / 1e9 * 1e3, 1e-9);
}

TEST(ShardPlannerTest, DeviceWithTooLittleMemoryIsSkipped) {
  std::vector<ShardDevice> devs = {Device("coordinator", 4, 10), Device("small", 4, 1),
                                   Device("roomy", 4, 2)};
  devs[1].memory_bytes = 50;  // less than one 100-byte layer
  auto plan = PlanShards(Model(4), devs, ShardObjective::kLatency);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->ranges.size(), 1u);
  EXPECT_EQ(plan->ranges[0].device, 2);
  EXPECT_EQ(plan->ranges[0].bytes, 400);
}

TEST(ShardPlannerTest, ModelBiggerThanAllDevicesIsRefusedNamingTheBytes) {
  const int64_t mib = 1 << 20;
  ShardModelCost m = Model(24, 160 * mib);  // 3.75 GiB
  m.coordinator_fixed_bytes = 256 * mib;
  std::vector<ShardDevice> devs = {Device("coordinator", 24, 1), Device("a", 24, 1),
                                   Device("b", 24, 1)};
  for (ShardDevice& d : devs) d.memory_bytes = 1024 * mib;
  auto plan = PlanShards(m, devs, ShardObjective::kLatency);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(plan.status().message().find("24 layers need 3.75 GiB"), std::string::npos)
      << plan.status().message();
  EXPECT_NE(plan.status().message().find("offer 2.75 GiB"), std::string::npos);
}

TEST(ShardPlannerTest, TotalFitsButNoContiguousPlacementNamesTheLayer) {
  const int64_t mib = 1 << 20;
  std::vector<ShardDevice> devs = {Device("coordinator", 3, 1), Device("a", 3, 1),
                                   Device("b", 3, 1)};
  devs[0].memory_bytes = 0;
  devs[1].memory_bytes = devs[2].memory_bytes = 150 * mib;  // one 100 MiB layer each
  auto plan = PlanShards(Model(3, 100 * mib), devs, ShardObjective::kThroughput);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(plan.status().message().find("layer 2 (100.0 MiB) fits on no device with room left"),
            std::string::npos)
      << plan.status().message();
  // A layer no device can hold at all says so (400 MiB needed, 450 MiB offered).
  ShardModelCost m = Model(3, 100 * mib);
  m.layer_bytes[1] = 200 * mib;
  devs[0].memory_bytes = 150 * mib;
  plan = PlanShards(m, devs, ShardObjective::kLatency);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("layer 1 (200.0 MiB) is larger than any device"),
            std::string::npos)
      << plan.status().message();
}

TEST(ShardPlannerTest, OneDeviceIsTheCoordinatorAlone) {
  std::vector<ShardDevice> devs = {Device("coordinator", 6, 2.5)};
  for (ShardObjective objective : {ShardObjective::kLatency, ShardObjective::kThroughput}) {
    auto plan = PlanShards(Model(6), devs, objective);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ASSERT_EQ(plan->ranges.size(), 1u);
    EXPECT_EQ(plan->ranges[0].device, 0);
    EXPECT_EQ(plan->ranges[0].first, 0);
    EXPECT_EQ(plan->ranges[0].end, 6);
    EXPECT_NEAR(plan->token_ms, 15, 1e-9);
    EXPECT_NEAR(plan->bottleneck_ms, 15, 1e-9);
  }
}

TEST(ShardPlannerTest, ThroughputSpreadsLayersForALowerBottleneck) {
  // Three equal devices: every split adds link time, so latency keeps all 12 layers at home
  // (24 ms); the pipeline's slowest stage is about a third of that when they share the work.
  std::vector<ShardDevice> devs = {Device("coordinator", 12, 2), Device("a", 12, 2),
                                   Device("b", 12, 2)};
  auto latency = PlanShards(Model(12), devs, ShardObjective::kLatency);
  auto throughput = PlanShards(Model(12), devs, ShardObjective::kThroughput);
  ASSERT_TRUE(latency.ok() && throughput.ok());
  ASSERT_EQ(latency->ranges.size(), 1u);
  EXPECT_NEAR(latency->bottleneck_ms, 24, 1e-9);
  EXPECT_EQ(throughput->ranges.size(), 3u);
  EXPECT_LT(throughput->bottleneck_ms, latency->bottleneck_ms / 2);
  EXPECT_GT(throughput->token_ms, latency->token_ms);
  const std::string text = DescribeShardPlan(*throughput, devs);
  // The coordinator's range has no link time, so where it sits among the others is a tie.
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3) << text;
  EXPECT_NE(text.find("coordinator: layers "), std::string::npos) << text;
  EXPECT_NE(text.find("a: layers "), std::string::npos) << text;
  EXPECT_NE(text.find("(8.00 compute + 1.07 link), 400 bytes\n"), std::string::npos) << text;
}

TEST(ShardPlannerTest, FewerRangesWhenEquallyGood) {
  // Free links and equal devices: any split ties, so latency keeps one range, and throughput
  // (bottleneck 2 ms for 4 layers on 3 devices) needs only two.
  std::vector<ShardDevice> devs = {Device("c", 4, 1, 1000, 0), Device("a", 4, 1, 1000, 0),
                                   Device("b", 4, 1, 1000, 0)};
  auto latency = PlanShards(Model(4, 100, 0), devs, ShardObjective::kLatency);
  ASSERT_TRUE(latency.ok());
  EXPECT_EQ(latency->ranges.size(), 1u);
  auto throughput = PlanShards(Model(4, 100, 0), devs, ShardObjective::kThroughput);
  ASSERT_TRUE(throughput.ok());
  EXPECT_NEAR(throughput->bottleneck_ms, 2, 1e-9);
  EXPECT_EQ(throughput->ranges.size(), 2u);
}

TEST(ShardPlannerTest, MalformedInputIsRefusedNamingTheDevice) {
  std::vector<ShardDevice> none;
  EXPECT_EQ(PlanShards(Model(4), none, ShardObjective::kLatency).status().code(),
            StatusCode::kInvalidArgument);
  std::vector<ShardDevice> devs = {Device("coordinator", 4, 1), Device("10.0.0.2:50061", 3, 1)};
  auto plan = PlanShards(Model(4), devs, ShardObjective::kLatency);
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("10.0.0.2:50061"), std::string::npos);
  devs[1] = Device("10.0.0.3:50061", 4, 1, 0);
  plan = PlanShards(Model(4), devs, ShardObjective::kLatency);
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("10.0.0.3:50061"), std::string::npos);
  EXPECT_NE(plan.status().message().find("bandwidth"), std::string::npos);
  std::vector<ShardDevice> many(kMaxShardDevices + 1, Device("d", 4, 1));
  EXPECT_EQ(PlanShards(Model(4), many, ShardObjective::kLatency).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(ShardPlannerTest, SixteenDevicesAndEightyLayersArePlanned) {
  std::vector<ShardDevice> devs;
  for (int d = 0; d < kMaxShardDevices; ++d) {
    std::string name = "d";
    name += std::to_string(d);  // not "d" + ...: GCC 12's -Wrestrict misfires on that
    devs.push_back(Device(name, 80, 1 + 0.1 * d));
    devs.back().memory_bytes = 900;  // nine 100-byte layers: at least nine devices
  }
  for (ShardObjective objective : {ShardObjective::kLatency, ShardObjective::kThroughput}) {
    auto plan = PlanShards(Model(80), devs, objective);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_TRUE(Evaluate(Model(80), devs, plan->ranges).valid);
    EXPECT_GE(plan->ranges.size(), 9u);
  }
}

}  // namespace
}  // namespace sparrow
