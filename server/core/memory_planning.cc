#include "server/core/memory_planning.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>

#include "engine/plan/hardware_profile.h"
#include "engine/plan/plan_inputs.h"
#include "engine/sparse/activation_profile.h"
#include "server/core/served_model.h"

namespace sparrow::server {

Result<PlanFn> MakePlanFn(const ServerConfig& config, const ServedModel& m,
                          const MemoryConsumers& consumers) {
  if (config.hw_profile == "none") return PlanFn();
  std::string path = config.hw_profile;
  if (path.empty()) {
    path = plan::DefaultHardwareProfilePath();
    std::error_code ec;
    if (path.empty() || !std::filesystem::exists(path, ec)) {
      spdlog::info(
          "memory: no hardware profile{}{}; budgets split by a fixed rule (run `sparrow "
          "profile-hw` to have them planned)",
          path.empty() ? "" : " at ", path);
      return PlanFn();
    }
  }
  SPARROW_ASSIGN_OR_RETURN(plan::HardwareProfile hw, plan::ReadHardwareProfile(path));
  std::shared_ptr<const ActivationProfile> profile;
  if (!config.profile.empty()) {
    auto p = ReadActivationProfile(config.profile, &m.model->config());
    if (!p.ok()) return p.status().WithContext("config: profile");
    profile = std::make_shared<const ActivationProfile>(std::move(p).value());
  }
  const double max_sparsity = std::strtod(config.sparsity.c_str(), nullptr);
  spdlog::info("memory: budgets planned with the hardware profile {}", path);
  // Built on first use: a PowerInfer file's share of active neurons is known once tokens ran.
  auto inputs = std::make_shared<std::optional<plan::PlanInputs>>();
  const int64_t step_tokens = config.step_token_budget;
  const int io_depth = static_cast<int>(config.io_depth);
  return PlanFn([&m, hw = std::move(hw), profile, inputs, consumers, max_sparsity, step_tokens,
                 io_depth](uint64_t budget) -> Result<plan::RunPlan> {
    if (!*inputs) {
      plan::PlanInputsOptions o;
      o.prompt_chunk = step_tokens;  // no step computes more
      o.io_queue_depth = io_depth;   // the store's reads in flight
      const FfnCounters f = m.scheduler->Stats().ffn;
      if (f.neurons_total > 0) {
        o.active_share =
            static_cast<double>(f.neurons_computed) / static_cast<double>(f.neurons_total);
      }
      auto in = plan::MakePlanInputs(*m.model, profile.get(), hw, o);
      if (!in.ok() && f.neurons_total == 0 && m.sparse_plan &&
          m.sparse_plan->policy == SparsePolicy::kPredictor) {
        // A PowerInfer file: how many neurons its predictor runs shows once tokens ran.
        return Unavailable(
            "the share of neurons the model's predictor runs is learnt from the first decoded "
            "tokens; until then the budget's own split applies (" +
            in.status().message() + ")");
      }
      if (!in.ok()) return in.status();
      *inputs = std::move(in).value();
      if (m.sparse_plan && m.sparse_plan->owned_bytes() > 0) {
        // Started sparse, the transposed down copy is held at every level, dense included (a
        // switch back needs it), and the budget already counts it with the weights: no level
        // adds it, or the planner would go dense to save memory that dense does not free.
        for (plan::PlanLevel& l : (*inputs)->levels) l.extra_bytes = 0;
      }
    }
    // The governor's budget in the planner's own count of what does not move (its estimates of
    // resident weights and scratch differ from the MemoryBudget's): the KV pool and the cache
    // then get the same bytes in both.
    const uint64_t fixed = MemoryBudget(consumers).fixed_bytes();
    const uint64_t elastic = budget > fixed ? budget - fixed : 0;
    plan::PlanRequest r;
    r.budget_bytes =
        static_cast<size_t>(elastic + (*inputs)->resident_bytes + (*inputs)->scratch_bytes);
    r.max_threads = m.pool ? m.pool->size() : 1;
    r.min_kv_bytes = static_cast<size_t>(consumers.kv_min_bytes);
    r.max_kv_bytes = static_cast<size_t>(consumers.kv_max_bytes);
    // The sparsity level is the one the server was started with: the plan may not go past it.
    if (!(*inputs)->powerinfer) r.max_sparsity = max_sparsity;
    return plan::SolvePlan(**inputs, r);
  });
}

}  // namespace sparrow::server
