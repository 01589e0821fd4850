#pragma once
// ConnectWorkers: the coordinator's start of collaborative inference. Reaches each worker named
// by `workers`, checks that it holds the same model file (by ModelDigest), asks how fast it runs
// each layer, places contiguous layer ranges on this device and the workers (`shard_layers`, or
// EdgeShard's dynamic program over the measured times), and returns the workers' ranges for the
// scheduler. Errors name the worker and what is wrong (unreachable, refused key, other file,
// a placement that cannot be).
#include <string>
#include <vector>

#include "server/core/worker_ranges.h"

namespace sparrow::server {

Result<ConnectedWorkers> ConnectWorkers(const ServerConfig& config, const Model& model,
                                        kernels::ThreadPool* pool);

// "host:port,host:port" -> the addresses; InvalidArgument naming the entry at fault.
Result<std::vector<std::string>> ParseWorkerList(const std::string& text);

}  // namespace sparrow::server
