#include "engine/plan/shard_planner.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>

#include "engine/common/check.h"

namespace sparrow {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string Bytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  char buf[64];
  if (b >= 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  } else if (b >= 1024.0 * 1024) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024.0 * 1024));
  } else {
    std::snprintf(buf, sizeof buf, "%lld bytes", static_cast<long long>(bytes));
  }
  return buf;
}

std::string Name(std::span<const ShardDevice> devices, size_t d) {
  std::string s = "device " + std::to_string(d);
  return devices[d].name.empty() ? s : s + " (" + devices[d].name + ")";
}

Status Validate(const ShardModelCost& model, std::span<const ShardDevice> devices) {
  if (devices.empty()) {
    return InvalidArgument("no devices: the coordinator (device 0) is needed to place layers");
  }
  if (devices.size() > static_cast<size_t>(kMaxShardDevices)) {
    return InvalidArgument(std::to_string(devices.size()) + " devices: the planner takes at most " +
                           std::to_string(kMaxShardDevices) + " (its table doubles per device)");
  }
  const size_t n = model.layer_bytes.size();
  if (n == 0) return InvalidArgument("the model has no layers to place");
  for (size_t i = 0; i < n; ++i) {
    if (model.layer_bytes[i] < 0) {
      return InvalidArgument("layer " + std::to_string(i) + " has a negative size");
    }
  }
  if (model.activation_bytes < 0 || model.coordinator_fixed_bytes < 0) {
    return InvalidArgument("the activation and coordinator fixed bytes must not be negative");
  }
  for (size_t d = 0; d < devices.size(); ++d) {
    const ShardDevice& dev = devices[d];
    if (dev.layer_ms.size() != n) {
      return InvalidArgument(Name(devices, d) + " has " + std::to_string(dev.layer_ms.size()) +
                             " layer times; the model has " + std::to_string(n) + " layers");
    }
    for (size_t i = 0; i < n; ++i) {
      // Negative or NaN times would break the monotonicity the search relies on.
      if (!(dev.layer_ms[i] >= 0) || !std::isfinite(dev.layer_ms[i])) {
        return InvalidArgument(Name(devices, d) + ": layer " + std::to_string(i) +
                               "'s time must be a non-negative number of ms");
      }
    }
    if (dev.memory_bytes < 0) return InvalidArgument(Name(devices, d) + ": negative memory");
    if (d == 0) continue;
    if (!(dev.link_mbps > 0) || !std::isfinite(dev.link_mbps)) {
      return InvalidArgument(Name(devices, d) + ": link bandwidth must be positive (measure the " +
                             "link to the coordinator first)");
    }
    if (!(dev.rtt_ms >= 0) || !std::isfinite(dev.rtt_ms)) {
      return InvalidArgument(Name(devices, d) + ": round trip must be a non-negative number");
    }
  }
  return Status::Ok();
}

// The instance as the search reads it: prefix sums, so a range's time and bytes cost O(1).
struct Costs {
  int n = 0, n_dev = 0;
  std::vector<std::vector<double>> ms;  // [d][i]: time of layers [0, i) on d
  std::vector<int64_t> bytes;           // [i]: bytes of layers [0, i)
  std::vector<double> transfer;         // [d]: the hidden state there and back
  std::vector<int64_t> room;            // [d]: memory for layers

  // Every comparison against a bottleneck uses this one expression, so the value found by
  // LeastBottleneck is met exactly (not to rounding) by the plan built under it.
  double Stage(int d, int i, int j) const { return (ms[d][j] - ms[d][i]) + transfer[d]; }
  bool Fits(int d, int i, int j, double cap) const {
    return bytes[j] - bytes[i] <= room[d] && Stage(d, i, j) <= cap;
  }
};

Costs MakeCosts(const ShardModelCost& model, std::span<const ShardDevice> devices) {
  Costs c;
  c.n = static_cast<int>(model.layer_bytes.size());
  c.n_dev = static_cast<int>(devices.size());
  c.bytes.assign(c.n + 1, 0);
  for (int i = 0; i < c.n; ++i) c.bytes[i + 1] = c.bytes[i] + model.layer_bytes[i];
  for (int d = 0; d < c.n_dev; ++d) {
    const ShardDevice& dev = devices[d];
    std::vector<double> ms(c.n + 1, 0);
    for (int i = 0; i < c.n; ++i) ms[i + 1] = ms[i] + dev.layer_ms[i];
    c.ms.push_back(std::move(ms));
    const double bits = 2.0 * static_cast<double>(model.activation_bytes) * 8;
    c.transfer.push_back(d == 0 ? 0 : dev.rtt_ms + bits / (dev.link_mbps * 1e6) * 1e3);
    c.room.push_back(dev.memory_bytes - (d == 0 ? model.coordinator_fixed_bytes : 0));
  }
  return c;
}

// The longest prefix of layers some placement covers with every stage at most `cap`. A placement
// covering [0, i) also covers any shorter prefix (trim its last ranges), and where a range of d
// can end at the furthest, ext(d, i), grows with its start i; so far(mask), the longest prefix
// the devices of mask cover, is the best over mask's last device d of ext(d, far(mask - d)).
int Reach(const Costs& c, double cap) {
  const size_t row = c.n + 1;
  std::vector<int> ext(c.n_dev * row);
  for (int d = 0; d < c.n_dev; ++d) {
    for (int i = 0, j = 0; i <= c.n; ++i) {
      j = std::max(j, i);
      while (j < c.n && c.Fits(d, i, j + 1, cap)) ++j;
      ext[d * row + i] = j;
    }
  }
  std::vector<int> far(size_t{1} << c.n_dev, 0);
  for (uint32_t mask = 1; mask < far.size(); ++mask) {
    for (int d = 0; d < c.n_dev; ++d) {
      if (mask >> d & 1) far[mask] = std::max(far[mask], ext[d * row + far[mask ^ (1u << d)]]);
    }
  }
  return far.back();
}

Status CheckRoom(const Costs& c, std::span<const ShardDevice> devices, int64_t fixed) {
  if (c.room[0] < 0) {
    return ResourceExhausted(Name(devices, 0) + " offers " + Bytes(devices[0].memory_bytes) +
                             ", less than its embedding and output layers alone need (" +
                             Bytes(fixed) + ")");
  }
  int64_t offered = 0;
  for (int64_t r : c.room) offered += r;
  const int64_t need = c.bytes[c.n];
  if (need > offered) {
    std::string need_s = Bytes(need), offered_s = Bytes(offered);
    if (need_s == offered_s) need_s += " (" + std::to_string(need) + " bytes)";
    return ResourceExhausted(
        "the model's " + std::to_string(c.n) + " layers need " + need_s +
        "; the devices together offer " + offered_s +
        (fixed > 0 ? " (after the coordinator's " + Bytes(fixed) + " of embedding and output)"
                   : std::string()));
  }
  const int reach = Reach(c, kInf);
  if (reach == c.n) return Status::Ok();
  const int64_t layer = c.bytes[reach + 1] - c.bytes[reach];
  const int most =
      static_cast<int>(std::max_element(c.room.begin(), c.room.end()) - c.room.begin());
  const std::string what = "layer " + std::to_string(reach) + " (" + Bytes(layer) + ")";
  if (layer > c.room[most]) {
    return ResourceExhausted(what + " is larger than any device can hold (the most is " +
                             Bytes(c.room[most]) + ", on " + Name(devices, most) + ")");
  }
  return ResourceExhausted("layers 0.." + std::to_string(reach - 1) + " fit, but " + what +
                           " fits on no device with room left (each device holds one contiguous "
                           "range of layers; more memory on any device would help)");
}

// The least bottleneck: the smallest stage time at which the devices still cover the model.
double LeastBottleneck(const Costs& c) {
  std::vector<double> stages;
  for (int d = 0; d < c.n_dev; ++d) {
    for (int i = 0; i < c.n; ++i) {
      for (int j = i + 1; j <= c.n && c.Fits(d, i, j, kInf); ++j)
        stages.push_back(c.Stage(d, i, j));
    }
  }
  std::sort(stages.begin(), stages.end());
  stages.erase(std::unique(stages.begin(), stages.end()), stages.end());
  // CheckRoom found a placement, and its stages are all at most the largest.
  size_t lo = 0, hi = stages.size() - 1;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (Reach(c, stages[mid]) == c.n) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return stages[lo];
}

// The least token_ms with every stage at most `cap` (EdgeShard's DP). The state is (layers
// placed, devices used): the star makes a range's transfer independent of its neighbours, so
// no last device is needed, and a state's ranges are its devices, so the fewest-ranges rule is
// applied only at the end. A range of d over [i, j) is legal for i in a window [lo(j), j) that
// only moves right, so each (devices, d) is swept once with a sliding-window minimum of
// dp(i) - ms_d(i): O(n_layer * n_dev * 2^n_dev) time, 12 bytes per state.
std::vector<ShardRange> LeastTokenMs(const Costs& c, double cap) {
  const size_t row = c.n + 1;
  const uint32_t masks = 1u << c.n_dev;
  std::vector<double> dp(masks * row, kInf);
  std::vector<int32_t> from(masks * row, -1);  // the range's first layer * 32 + its device
  dp[0] = 0;
  std::vector<int> window(row);
  for (uint32_t mask = 0; mask < masks; ++mask) {
    const double* cur = &dp[mask * row];
    if (std::all_of(cur, cur + c.n, [](double v) { return v == kInf; })) continue;
    for (int d = 0; d < c.n_dev; ++d) {
      if (mask >> d & 1) continue;
      const std::vector<double>& ms = c.ms[d];
      double* next = &dp[(mask | 1u << d) * row];
      int32_t* next_from = &from[(mask | 1u << d) * row];
      int head = 0, tail = 0, lo = 0;
      for (int j = 1; j <= c.n; ++j) {
        if (cur[j - 1] < kInf) {
          const double key = cur[j - 1] - ms[j - 1];
          while (tail > head && cur[window[tail - 1]] - ms[window[tail - 1]] >= key) --tail;
          window[tail++] = j - 1;
        }
        while (lo < j && !c.Fits(d, lo, j, cap)) ++lo;
        while (head < tail && window[head] < lo) ++head;
        if (head == tail) continue;
        const int i = window[head];
        const double v = cur[i] + c.Stage(d, i, j);
        if (v < next[j]) next[j] = v, next_from[j] = i * 32 + d;
      }
    }
  }
  double best = kInf;
  for (uint32_t mask = 0; mask < masks; ++mask) best = std::min(best, dp[mask * row + c.n]);
  SPARROW_CHECK(best < kInf);  // CheckRoom and LeastBottleneck found a placement
  // Within rounding of the best, fewer ranges win: a split that saves nothing only adds a device
  // to fail.
  const double tol = 1e-12 * std::max(1.0, best);
  uint32_t pick = 0;
  for (uint32_t mask = 1; mask < masks; ++mask) {
    const double v = dp[mask * row + c.n], p = dp[pick * row + c.n];
    if (v > best + tol) continue;
    const int r = std::popcount(mask), pr = std::popcount(pick);
    if (pick == 0 || r < pr || (r == pr && v < p)) pick = mask;
  }
  std::vector<ShardRange> ranges;
  for (int j = c.n; j > 0;) {
    const int32_t f = from[pick * row + j];
    SPARROW_CHECK(f >= 0);
    ShardRange r;
    r.device = f % 32;
    r.first = f / 32;
    r.end = j;
    ranges.push_back(r);
    pick ^= 1u << r.device;
    j = f / 32;
  }
  std::reverse(ranges.begin(), ranges.end());
  return ranges;
}

}  // namespace

Result<ShardPlan> PlanShards(const ShardModelCost& model, std::span<const ShardDevice> devices,
                             ShardObjective objective) {
  SPARROW_RETURN_IF_ERROR(Validate(model, devices));
  const Costs c = MakeCosts(model, devices);
  SPARROW_RETURN_IF_ERROR(CheckRoom(c, devices, model.coordinator_fixed_bytes));
  const double cap = objective == ShardObjective::kThroughput ? LeastBottleneck(c) : kInf;
  ShardPlan plan;
  plan.ranges = LeastTokenMs(c, cap);
  for (ShardRange& r : plan.ranges) {
    const int i = static_cast<int>(r.first), j = static_cast<int>(r.end);
    r.compute_ms = c.ms[r.device][j] - c.ms[r.device][i];
    r.transfer_ms = c.transfer[r.device];
    r.bytes = c.bytes[j] - c.bytes[i];
    plan.token_ms += c.Stage(r.device, i, j);
    plan.bottleneck_ms = std::max(plan.bottleneck_ms, c.Stage(r.device, i, j));
  }
  return plan;
}

std::string DescribeShardPlan(const ShardPlan& plan, std::span<const ShardDevice> devices) {
  std::string out;
  for (const ShardRange& r : plan.ranges) {
    const size_t d = static_cast<size_t>(r.device);
    const std::string who = d < devices.size() && !devices[d].name.empty()
                                ? devices[d].name
                                : "device " + std::to_string(d);
    char buf[256];
    std::snprintf(buf, sizeof buf, "layers %lld..%lld (%lld), %.2f ms (%.2f compute + %.2f link), ",
                  static_cast<long long>(r.first), static_cast<long long>(r.end - 1),
                  static_cast<long long>(r.end - r.first), r.compute_ms + r.transfer_ms,
                  r.compute_ms, r.transfer_ms);
    const std::string what = r.slice ? ": a slice (" + r.slice->ToString() + ") of " : ": ";
    out += who + what + buf + Bytes(r.bytes) + "\n";
  }
  return out;
}

}  // namespace sparrow
