#pragma once
// `sparrow plan`: loads a model (and its activation profile), reads the cached hardware profile
// and prints the plan the Z3 planner (engine/plan/planner.h) makes for a memory budget, as YAML
// or JSON; an infeasible budget is one line on stderr naming the binding constraint.
#include <cstdint>
#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace sparrow::tools {

struct PlanCommandOptions {
  std::string model;
  std::string profile;  // activation profile (sparrow profile): levels and miss curve
  std::string hw;       // empty: plan::DefaultHardwareProfilePath()
  double budget_mb = 0;
  int threads_max = 0;  // 0: the hardware profile's thread counts
  double min_tok_s = 0;
  std::optional<double> max_sparsity;  // unset: 0.5 (SwiGLU), none (PowerInfer files)
  std::string objective = "speed";
  double active_share = 0;  // PowerInfer files
  int64_t kv_tokens = 0;    // KV pool for this many positions at least (0: training context)
  int io_depth = 128;
  std::string output;  // also write the YAML plan here
  bool json = false;
};

void RegisterPlanCommand(CLI::App& app, PlanCommandOptions& opts, int& exit_code);
int RunPlan(const PlanCommandOptions& opts);

}  // namespace sparrow::tools
