#include "engine/control/budget_planner.h"

#include <utility>

#include "engine/plan/plan_inputs.h"

namespace sparrow {

PlanFn MakeBudgetPlanner(BudgetPlannerOptions options, const Model& model,
                         const Scheduler& scheduler, std::shared_ptr<const SparsePlan> sparse,
                         const MemoryConsumers& consumers) {
  // Built on first use: a PowerInfer file's share of active neurons is known once tokens ran.
  auto inputs = std::make_shared<std::optional<plan::PlanInputs>>();
  auto o = std::make_shared<const BudgetPlannerOptions>(std::move(options));
  return [&model, &scheduler, sparse = std::move(sparse), inputs, o,
          consumers](uint64_t budget) -> Result<plan::RunPlan> {
    if (!*inputs) {
      plan::PlanInputsOptions io;
      io.prompt_chunk = o->step_tokens;
      io.io_queue_depth = o->io_depth;
      io.kv_types = scheduler.options().kv_types;
      const FfnCounters f = scheduler.Stats().ffn;
      if (o->active_share) {
        io.active_share = *o->active_share;
      } else if (f.neurons_total > 0) {
        io.active_share =
            static_cast<double>(f.neurons_computed) / static_cast<double>(f.neurons_total);
      }
      auto in = plan::MakePlanInputs(model, o->profile.get(), o->hardware, io);
      if (!in.ok() && io.active_share == 0 && sparse &&
          sparse->policy == SparsePolicy::kPredictor) {
        return Unavailable(
            "the share of neurons the model's predictor runs is learnt from the first decoded "
            "tokens; until then the budget's own split applies (" +
            in.status().message() + ")");
      }
      if (!in.ok()) return in.status();
      *inputs = std::move(in).value();
      if (sparse && sparse->owned_bytes() > 0) {
        // Started sparse, the transposed down copy is held at every level, dense included (a
        // switch back needs it), and the budget already counts it with the weights: no level
        // adds it, or the planner would go dense to save memory that dense does not free.
        for (plan::PlanLevel& l : (*inputs)->levels) l.extra_bytes = 0;
      }
    }
    const uint64_t fixed = MemoryBudget(consumers).fixed_bytes();
    const uint64_t elastic = budget > fixed ? budget - fixed : 0;
    plan::PlanRequest r;
    r.budget_bytes =
        static_cast<size_t>(elastic + (*inputs)->resident_bytes + (*inputs)->scratch_bytes);
    r.max_threads = o->max_threads;
    r.min_kv_bytes = static_cast<size_t>(consumers.kv_min_bytes);
    r.max_kv_bytes = static_cast<size_t>(consumers.kv_max_bytes);
    if (!(*inputs)->powerinfer) r.max_sparsity = o->max_sparsity;
    return plan::SolvePlan(**inputs, r);
  };
}

}  // namespace sparrow
