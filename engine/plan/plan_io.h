#pragma once
// A RunPlan written out and read back: YAML for people and for sparrowd's plan file (every key
// commented), JSON for tools (`sparrow plan --json`). ReadPlan validates what it reads, naming
// the file and the key at fault. Pure functions; thread-safe.
#include <string>

#include "engine/common/result.h"
#include "engine/plan/planner.h"

namespace sparrow::plan {

std::string PlanToYaml(const RunPlan& plan);
std::string PlanToJson(const RunPlan& plan);

// Reads a plan written by PlanToYaml. The choices (threads, neuron_cache_mib, kv_pool_mib,
// sparsity) are required; the predictions are read when present. `where` names the origin.
Result<RunPlan> ParsePlan(const std::string& yaml, const std::string& where);
Result<RunPlan> ReadPlan(const std::string& path);

}  // namespace sparrow::plan
