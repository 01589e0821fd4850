#pragma once
// How sparrowctl shows things to a person: the status summary, the request table and the
// `watch` screen with bars. (--json prints the messages instead.) Pure functions.
#include <google/protobuf/message.h>

#include <string>

#include "sparrow/admin/v1/admin.pb.h"

namespace sparrow::ctl {

// One message as JSON with the proto field names (the HTTP admin API's names too).
std::string ToJson(const google::protobuf::Message& m, bool pretty);

std::string RenderStatus(const admin::v1::ServerStatus& s);
// The placement, one line per device (its layers or slice; a worker's link state, steps,
// failures, bytes each way, compute and wall ms, last error), then the plan's description.
std::string RenderShards(const admin::v1::Shards& s);
// `sparrowctl budget`: the budget, its bounds and split, what the KV pool and the neuron cache
// hold, pressure, and the planner's plan (or why there is none).
std::string RenderMemory(const admin::v1::MemoryBudget& m);
std::string RenderRequests(const google::protobuf::RepeatedPtrField<admin::v1::RequestInfo>& rs);
// The `watch` screen for a terminal `width` columns wide.
std::string RenderWatch(const admin::v1::ServerStatus& s, const std::string& target, int width);

// "1.2 GiB", "640 KiB".
std::string HumanBytes(double bytes);

}  // namespace sparrow::ctl
