#pragma once
// What an operator sees of a running sparrowd, as the admin.proto messages both frontends send
// (gRPC as they are, HTTP as JSON through server/http/admin_json.h): the status (version,
// model, uptime, requests, throughput, latency percentiles, KV cache, sparse FFN, memory; the
// admin status route and RPC, each event-stream snapshot), the memory budget and the shard
// placement. Pure functions; CollectStatus is thread-safe.
#include "server/core/request_registry.h"
#include "server/core/server_context.h"
#include "sparrow/admin/v1/admin.pb.h"

namespace sparrow::server {

namespace adminpb = ::sparrow::admin::v1;

// The store's counters as the status shows them: lookups are every bundle a step needed, hits the
// ones the hot segment or the cache held; the hit rate only once there were lookups.
adminpb::NeuronCacheStatus NeuronCacheStatusOf(const NeuronStoreStats& store);

// The memory budget as GET /admin/v1/memory and the gRPC GetMemory give it.
adminpb::MemoryBudget DescribeMemory(const MemoryGovernorStats& m, const SchedulerStats& s);

// Where each layer is computed and how each worker's link has gone; a model on this device
// alone is one placement and no links.
adminpb::Shards DescribeShards(const ServedModel& served);
// The same for the model new requests go to: what both frontends answer.
adminpb::Shards DescribeShards(const ServerContext& ctx);

// The served model; fixed until a reload, so callers describe it once per model.
adminpb::ModelStatus DescribeModel(const ServedModel& served);
// Everything but the throughput over time and the event subscribers (AdminController's). Every
// part is present; the memory budget's fields only with a memory governor.
adminpb::ServerStatus CollectStatus(const ServerContext& ctx, const adminpb::ModelStatus& model);

// One listed request; with a tokenizer, its prompt as text (invalid UTF-8 replaced).
adminpb::RequestInfo DescribeRequest(const RequestSnapshot& r,
                                     const Tokenizer* tokenizer_for_prompt);

}  // namespace sparrow::server
