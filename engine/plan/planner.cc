#include "engine/plan/planner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/common/env.h"
#include "engine/plan/cost_model.h"
#include "engine/plan/plan_model.h"

namespace sparrow::plan {
namespace {

namespace cn = constraint;
using Objective = PlanRequest::Objective;
using detail::Active;
using detail::LastAllowedLevel;
using detail::Outcome;
using detail::PlanSolver;
using detail::Solution;

constexpr double kMiB = 1024.0 * 1024.0;

bool Has(const std::vector<std::string>& v, const char* name) {
  return std::find(v.begin(), v.end(), name) != v.end();
}

std::string Mib(uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / kMiB);
  return buf;
}

std::string Num(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

uint64_t BudgetFlag(uint64_t bytes) {
  return static_cast<uint64_t>(std::ceil(static_cast<double>(bytes) / kMiB));
}

// What the other constraints say when they cannot be met at any budget.
Status Unreachable(PlanSolver& solver, const PlanInputs& in, const PlanRequest& req,
                   const std::vector<std::string>& core) {
  if (Has(core, cn::kMaxSparsity) && LastAllowedLevel(in, req.max_sparsity) < 0) {
    return InvalidArgument(std::string(cn::kMaxSparsity) + ": no sparsity level is at or below " +
                           Num("%.2f", req.max_sparsity) + " (the lowest is " +
                           Num("%.2f", in.levels.front().sparsity) + ")");
  }
  if (Has(core, cn::kMinSpeed)) {
    Active off;
    off.budget = off.min_speed = false;
    Outcome best = solver.Solve(Objective::kSpeed, off);
    std::string fastest;
    if (best.sat) {
      const Solution& s = best.solution;
      const double t = Evaluate(in, s.threads, in.cache[s.cache], in.levels[s.level], 0).token_s;
      fastest = ": the fastest plan at any budget gives " + Num("%.2f", 1 / t) + " tokens/s";
    }
    return OutOfRange(std::string(cn::kMinSpeed) + ": " + Num("%.2f", req.min_tokens_per_s) +
                      " tokens/s cannot be reached with at most " +
                      std::to_string(req.max_threads) + " threads and sparsity at most " +
                      Num("%.2f", req.max_sparsity) + fastest);
  }
  std::string names;
  for (const std::string& c : core) names += (names.empty() ? "" : ", ") + c;
  return InvalidArgument("the constraints cannot all be met (in conflict: " + names + ")");
}

Status ValidateRequest(const PlanInputs& in, const PlanRequest& r) {
  if (in.levels.empty() || in.cache.empty() || in.n_layer <= 0) {
    return InvalidArgument("plan inputs: no sparsity level, cache size or layer to plan for");
  }
  if (r.max_threads < 1) return InvalidArgument("max_threads must be at least 1");
  if (!(r.min_tokens_per_s >= 0) || !std::isfinite(r.min_tokens_per_s)) {
    return InvalidArgument("min_tokens_per_s must be a number at least 0");
  }
  if (!(r.max_sparsity >= 0 && r.max_sparsity <= 1)) {
    return InvalidArgument("max_sparsity must be in [0, 1]");
  }
  return Status::Ok();
}

// Without the budget (and the speed floor, unless `floor`), the least memory; an error when
// nothing works at any budget.
Result<uint64_t> LeastMemory(PlanSolver& solver, const PlanInputs& in, const PlanRequest& req,
                             bool floor = true) {
  Active on;
  on.budget = false;
  on.min_speed = floor;
  Outcome o = solver.Solve(Objective::kMemory, on);
  if (!o.sat) return Unreachable(solver, in, req, o.core);
  return o.solution.memory_bytes;
}

}  // namespace

Result<size_t> MinimumBudget(const PlanInputs& inputs, const PlanRequest& request) {
  SPARROW_RETURN_IF_ERROR(ValidateRequest(inputs, request));
  try {
    PlanSolver solver(inputs, request);
    SPARROW_ASSIGN_OR_RETURN(uint64_t m, LeastMemory(solver, inputs, request));
    return static_cast<size_t>(m);
  } catch (const z3::exception& e) {
    return Internal(std::string("planner: Z3 failed: ") + e.msg());
  }
}

Result<RunPlan> SolvePlan(const PlanInputs& inputs, const PlanRequest& request) {
  const uint64_t t0 = Env::Default()->NowMicros();
  SPARROW_RETURN_IF_ERROR(ValidateRequest(inputs, request));
  const PlanInputs& in = inputs;
  try {
    const Objective obj = request.objective;
    PlanSolver solver(in, request);  // one model for every solve below
    Outcome o = solver.Solve(obj, Active{});
    if (!o.sat) {
      if (!Has(o.core, cn::kBudget)) return Unreachable(solver, in, request, o.core);
      SPARROW_ASSIGN_OR_RETURN(uint64_t least, LeastMemory(solver, in, request));
      std::string why;
      if (Has(o.core, cn::kMinSpeed)) {
        auto floorless = LeastMemory(solver, in, request, /*floor=*/false);
        if (floorless.ok() && *floorless < least) {
          why = " (the floor of " + Num("%.2f", request.min_tokens_per_s) +
                " tokens/s is what needs it: without it " + Mib(*floorless) + " would do)";
        }
      }
      return ResourceExhausted(std::string(cn::kBudget) + ": " + Mib(request.budget_bytes) +
                               " is too small: the smallest plan meeting the other constraints "
                               "needs " +
                               Mib(least) + " (--budget-mb " + std::to_string(BudgetFlag(least)) +
                               ")" + why);
    }
    const Solution& s = o.solution;
    RunPlan plan;
    plan.objective = obj == Objective::kSpeed ? "speed" : "memory";
    // Which constraints bind: dropping one alone would let the objective improve.
    auto check = [&](bool Active::*constraint, const char* name) {
      Active without;
      without.*constraint = false;
      if (solver.Improvable(obj, without, s)) plan.binding.push_back(name);
    };
    if (obj == Objective::kSpeed) {
      check(&Active::budget, cn::kBudget);
    } else if (request.min_tokens_per_s > 0) {
      check(&Active::min_speed, cn::kMinSpeed);
    }
    if (request.max_threads < in.hw.max_threads) check(&Active::threads, cn::kThreads);
    if (LastAllowedLevel(in, request.max_sparsity) + 1 < static_cast<int>(in.levels.size())) {
      check(&Active::max_sparsity, cn::kMaxSparsity);
    }

    const CachePoint& cache = in.cache[s.cache];
    const PlanLevel& level = in.levels[s.level];
    const TokenCost cost = Evaluate(in, s.threads, cache, level, s.kv_bytes);
    plan.threads = s.threads;
    plan.neuron_cache_bytes = CacheBytes(in, cache);
    plan.kv_pool_bytes = s.kv_bytes;
    plan.sparsity = level.sparsity;
    plan.predicted_ms_per_token = cost.token_s * 1e3;
    plan.predicted_tokens_per_s = 1 / cost.token_s;
    plan.memory_bytes = cost.memory_bytes;
    plan.budget_bytes = request.budget_bytes;
    plan.cache_fraction = cache.fraction;
    plan.miss_rate = cache.miss_rate;
    plan.active_share = level.active_share;
    plan.flash_mib_per_token = cost.flash_bytes / kMiB;
    plan.dense_ms = cost.dense_s * 1e3;
    plan.ffn_compute_ms = cost.ffn_compute_s * 1e3;
    plan.flash_ms = cost.flash_s * 1e3;
    plan.solve_ms = static_cast<double>(Env::Default()->NowMicros() - t0) / 1e3;
    return plan;
  } catch (const z3::exception& e) {
    return Internal(std::string("planner: Z3 failed: ") + e.msg());
  }
}

}  // namespace sparrow::plan
