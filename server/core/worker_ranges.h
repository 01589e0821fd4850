#pragma once
// What a coordinator of collaborative inference knows of its workers once connected: the layer
// ranges they compute (for the scheduler) and where every layer went (for the log and the admin
// API). How they are reached is the gRPC side's (server/shard/connect_workers.h); server/core
// only holds the result, so that it builds without gRPC.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/server_config.h"
#include "engine/common/result.h"
#include "engine/model/model.h"
#include "engine/runtime/remote_layers.h"

namespace sparrow {
namespace kernels {
class ThreadPool;
}
}  // namespace sparrow

namespace sparrow::server {

struct ShardPlacement {
  std::string device;  // "this device" or the worker's host:port
  int64_t first_layer = 0, end_layer = 0;
  std::string slice;  // in a tensor split, its slice of each layer ("kv heads 0..3, neurons ..")
};

// How a coordinator's link to one worker has gone, for the admin API.
struct ShardLinkStats {
  std::string address;
  int64_t first_layer = 0, end_layer = 0;
  bool connected = false;  // a session is open
  int64_t steps = 0;
  int64_t sessions = 0;  // opened, reconnections included
  int64_t failures = 0;
  int64_t bytes_sent = 0, bytes_received = 0;
  double worker_ms = 0;  // the worker's own compute time, summed
  double wall_ms = 0;    // from send to answer, summed (the difference is the network's)
  int64_t worker_kv_bytes = 0;
  std::string last_error;
};

class ShardLink {
 public:
  virtual ~ShardLink() = default;
  virtual ShardLinkStats link_stats() const = 0;
};

// Where the layers are now: the placement changes when a device leaves or comes back.
// Thread-safe.
class ShardTopology {
 public:
  struct View {
    std::vector<ShardPlacement> placement;  // every device with layers, in layer order
    std::vector<std::shared_ptr<const ShardLink>> links;  // the workers with layers
    std::string description;                              // one line per device
    int64_t replans = 0;                                  // placements since the first
    std::vector<std::string> devices_down;                // workers left out, by address
  };
  virtual ~ShardTopology() = default;
  virtual View view() const = 0;
  // Starts watching the devices: when one leaves or comes back and the layers are placed anew,
  // `apply` gets the new remote ranges (from the watching thread). Stops at destruction.
  virtual void Start(std::function<void(std::vector<std::shared_ptr<RemoteLayers>>)> apply) = 0;
};

struct ConnectedWorkers {
  std::vector<std::shared_ptr<RemoteLayers>> ranges;  // the first placement's, for the scheduler
  std::shared_ptr<ShardTopology> topology;
};

// Reaches the workers of config.workers for `model` (ConnectWorkers, when built with gRPC).
using ConnectWorkersFn = std::function<Result<ConnectedWorkers>(
    const ServerConfig& config, const Model& model, kernels::ThreadPool* pool)>;

}  // namespace sparrow::server
