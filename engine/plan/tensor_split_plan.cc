#include "engine/plan/tensor_split_plan.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

namespace sparrow {

Result<ShardPlan> PlanTensorSplit(const Model& model, const ShardModelCost& cost,
                                  std::span<const ShardDevice> devices) {
  const int64_t n_layer = model.config().n_layer;
  if (devices.empty() || devices.size() > static_cast<size_t>(kMaxShardDevices)) {
    return InvalidArgument("a tensor split needs 1.." + std::to_string(kMaxShardDevices) +
                           " devices, got " + std::to_string(devices.size()));
  }
  if (static_cast<int64_t>(cost.layer_bytes.size()) != n_layer) {
    return InvalidArgument("the cost has " + std::to_string(cost.layer_bytes.size()) +
                           " layers, the model " + std::to_string(n_layer));
  }
  // A device's speed: the inverse of its measured time for all layers; unmeasured, all alike.
  const bool measured = std::all_of(devices.begin(), devices.end(), [&](const ShardDevice& d) {
    return static_cast<int64_t>(d.layer_ms.size()) == n_layer;
  });
  std::vector<double> total_ms(devices.size(), 0), shares(devices.size(), 1);
  for (size_t i = 0; i < devices.size(); ++i) {
    if (measured)
      total_ms[i] = std::accumulate(devices[i].layer_ms.begin(), devices[i].layer_ms.end(), 0.0);
    if (measured && total_ms[i] > 0) shares[i] = 1 / total_ms[i];
    if (i > 0 && devices[i].link_mbps <= 0) {
      return InvalidArgument(devices[i].name + ": no link bandwidth");
    }
  }
  const int64_t all_bytes =
      std::accumulate(cost.layer_bytes.begin(), cost.layer_bytes.end(), int64_t{0});
  // Galaxy's rule: shares by speed, but no device more than its memory holds; what a full
  // device cannot take goes to the others by their speed (a few rounds settle it).
  std::vector<double> cap(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    const int64_t room = devices[i].memory_bytes - (i == 0 ? cost.coordinator_fixed_bytes : 0);
    // Held back: one grain of neurons either way when the shares are rounded.
    cap[i] = std::max(
        0.0,
        static_cast<double>(room) / static_cast<double>(std::max<int64_t>(1, all_bytes)) - 0.01);
  }
  const std::vector<double> speed = shares;
  std::vector<uint8_t> capped(devices.size(), 0);
  for (size_t round = 0; round < devices.size(); ++round) {
    double left = 1, free_speed = 0;
    for (size_t i = 0; i < devices.size(); ++i) {
      if (capped[i]) {
        left -= shares[i];
      } else {
        free_speed += speed[i];
      }
    }
    if (free_speed <= 0) break;
    bool changed = false;
    for (size_t i = 0; i < devices.size(); ++i) {
      if (capped[i]) continue;
      shares[i] = speed[i] / free_speed * left;
      if (shares[i] > cap[i]) {
        shares[i] = cap[i];
        capped[i] = 1;
        changed = true;
      }
    }
    if (!changed) break;
  }
  // A device with no room left takes nothing (CutSlices wants positive shares).
  for (double& v : shares) v = std::max(v, 1e-9);
  SPARROW_ASSIGN_OR_RETURN(auto slices, CutSlices(model, 0, n_layer, shares));
  const ModelConfig& c = model.config();
  ShardPlan plan;
  for (size_t i = 0; i < devices.size(); ++i) {
    const TensorSlice& s = slices[i];
    if (s.kv_heads() == 0 && s.neurons() == 0 && i > 0) continue;
    // The FFN's share stands for the device's share of the weights (most of a layer's bytes).
    const double part = static_cast<double>(s.neurons()) / static_cast<double>(c.n_ff);
    ShardRange r;
    r.device = static_cast<int>(i);
    r.first = 0;
    r.end = n_layer;
    r.slice = s;
    r.compute_ms = total_ms[i] * part;
    r.bytes = static_cast<int64_t>(static_cast<double>(all_bytes) * part);
    if (i > 0) {
      const double one_way_ms =
          static_cast<double>(cost.activation_bytes) * 8 / (devices[i].link_mbps * 1e6) * 1e3;
      r.transfer_ms = 2.0 * static_cast<double>(n_layer) * (devices[i].rtt_ms + 2 * one_way_ms);
    }
    const int64_t need = r.bytes + (i == 0 ? cost.coordinator_fixed_bytes : 0);
    if (need > devices[i].memory_bytes) {
      return ResourceExhausted(devices[i].name + " would hold " + std::to_string(need >> 20) +
                               " MiB for its slice (" + s.ToString() + ") and offers " +
                               std::to_string(devices[i].memory_bytes >> 20) + " MiB");
    }
    plan.token_ms = std::max(plan.token_ms, r.compute_ms + r.transfer_ms);
    plan.ranges.push_back(r);
  }
  plan.bottleneck_ms = plan.token_ms;
  return plan;
}

}  // namespace sparrow
