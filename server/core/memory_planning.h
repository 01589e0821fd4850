#pragma once
// The Z3 planner in sparrowd: with a hardware profile of this device (`sparrow profile-hw`), every
// memory budget the governor decides is planned (engine/plan): how many compute threads, how much
// neuron cache and KV pool, and the tokens/s to expect. Without one the budget's own split
// applies (MemoryBudget).
#include "config/server_config.h"
#include "engine/common/result.h"
#include "engine/memory/memory_budget.h"
#include "server/core/memory_governor.h"

namespace sparrow::server {

struct ServedModel;

// The planner for `m` (its model, scheduler and pool must outlive the function), or a null
// PlanFn when there is no hardware profile: `hw_profile` names it ("none": never plan), else the
// default cache path is used when the file exists. Fails when a named profile, or the model's
// activation profile, cannot be read. A PowerInfer file's active share is learnt from the first
// decoded tokens; until then the planner answers with an error and the split applies.
Result<PlanFn> MakePlanFn(const ServerConfig& config, const ServedModel& m,
                          const MemoryConsumers& consumers);

}  // namespace sparrow::server
