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
};

struct ConnectedWorkers {
  std::vector<std::shared_ptr<RemoteLayers>> ranges;
  std::vector<ShardPlacement> placement;  // every device with layers, in layer order
  std::string description;                // one line per device
};

// Reaches the workers of config.workers for `model` (ConnectWorkers, when built with gRPC).
using ConnectWorkersFn = std::function<Result<ConnectedWorkers>(
    const ServerConfig& config, const Model& model, kernels::ThreadPool* pool)>;

}  // namespace sparrow::server
