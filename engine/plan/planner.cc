#include "engine/plan/planner.h"

#include <z3++.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "engine/plan/cost_model.h"

namespace sparrow::plan {
namespace {

namespace cn = constraint;
using Objective = PlanRequest::Objective;

constexpr double kMiB = 1024.0 * 1024.0;

// The cost model tabulated over every choice (cost_model.h), so Z3's model stays linear: each
// product of two inputs (active share and a thread count's rate, or a miss rate) is a table
// entry, looked up by the choice's index.
struct Tables {
  int n_threads = 0;
  size_t n_cache = 0, n_levels = 0;
  std::vector<double> dense_ns, ffn_ns;  // [t * n_levels + s], per token (ffn: all layers)
  std::vector<double> flash_ns;          // [c * n_levels + s], all layers
  std::vector<uint64_t> cache_bytes;     // [c]
  std::vector<uint64_t> extra_bytes;     // [s]
};

Tables Tabulate(const PlanInputs& in) {
  Tables t;
  t.n_threads = in.hw.max_threads;
  t.n_cache = in.cache.size();
  t.n_levels = in.levels.size();
  const double layers = static_cast<double>(in.n_layer);
  for (int th = 1; th <= t.n_threads; ++th) {
    for (const PlanLevel& l : in.levels) {
      t.dense_ns.push_back(DenseSeconds(in, th, l) * 1e9);
      t.ffn_ns.push_back(FfnComputeSeconds(in, th, l) * layers * 1e9);
    }
  }
  for (const CachePoint& c : in.cache) {
    t.cache_bytes.push_back(CacheBytes(in, c));
    for (const PlanLevel& l : in.levels)
      t.flash_ns.push_back(FlashSeconds(in, c, l) * layers * 1e9);
  }
  for (const PlanLevel& l : in.levels) t.extra_bytes.push_back(l.extra_bytes);
  return t;
}

// Which of the request's constraints a solve asserts.
struct Active {
  bool budget = true, threads = true, min_speed = true, max_sparsity = true;
};

struct Solution {
  int threads = 1;
  size_t cache = 0, level = 0;
  uint64_t kv_bytes = 0;
  double token_ns = 0;
  uint64_t memory_bytes = 0;
};

struct Outcome {
  bool sat = false;
  Solution solution;
  std::vector<std::string> core;  // unsat: the tracked constraints in conflict
};

// Nanoseconds as an integer numeral: sub-nanosecond differences never decide a plan.
z3::expr Ns(z3::context& ctx, double ns) {
  return ctx.int_val(static_cast<int64_t>(std::llround(ns)));
}

// The last level index within max_sparsity, or -1 when none is.
int LastAllowedLevel(const PlanInputs& in, double max_sparsity) {
  int last = -1;
  for (size_t s = 0; s < in.levels.size(); ++s) {
    if (in.levels[s].sparsity <= max_sparsity + 1e-9) last = static_cast<int>(s);
  }
  return last;
}

// One choice per dimension as one-hot Booleans (an ite chain over an index was 30x slower to
// optimise: every bound the optimiser tries had to be pushed through the whole chain).
struct OneHot {
  std::vector<z3::expr> vars;
  int Chosen(const z3::model& m) const {
    for (size_t i = 0; i < vars.size(); ++i) {
      if (m.eval(vars[i], true).is_true()) return static_cast<int>(i);
    }
    return 0;
  }
};

template <typename Sink>  // z3::optimize or z3::solver
OneHot MakeOneHot(z3::context& ctx, Sink& sink, const char* name, size_t n) {
  OneHot h;
  z3::expr_vector v(ctx);
  for (size_t i = 0; i < n; ++i) {
    h.vars.push_back(ctx.bool_const((std::string(name) + "_" + std::to_string(i)).c_str()));
    v.push_back(h.vars.back());
  }
  sink.add(z3::atleast(v, 1) && z3::atmost(v, 1));
  return h;
}

// sum of values[i] over the chosen i (one of them).
z3::expr Pick(z3::context& ctx, const OneHot& h, const std::vector<z3::expr>& values) {
  z3::expr sum = ctx.int_val(0);
  for (size_t i = 0; i < h.vars.size(); ++i)
    sum = sum + z3::ite(h.vars[i], values[i], ctx.int_val(0));
  return sum;
}

// The planning problem's variables, and what the objectives read of them.
struct Problem {
  OneHot threads, cache, level;
  z3::expr kv, token_ns, memory, thread_index;
};

template <typename Sink>
Problem Build(z3::context& ctx, Sink& sink, const PlanInputs& in, const Tables& tab,
              const PlanRequest& req, const Active& on) {
  const size_t nS = tab.n_levels;
  const OneHot th = MakeOneHot(ctx, sink, "threads", static_cast<size_t>(tab.n_threads));
  const OneHot ca = MakeOneHot(ctx, sink, "cache", tab.n_cache);
  const OneHot lv = MakeOneHot(ctx, sink, "level", nS);
  z3::expr kv = ctx.int_const("kv_bytes");
  const uint64_t kv_max = std::max(req.min_kv_bytes, req.max_kv_bytes);
  sink.add(kv >= 0 && kv <= ctx.int_val(kv_max));

  // T = D + max(C, F) in nanoseconds: D and the layer FFN time sit above the table entries of
  // the chosen pair (each product of two inputs is one precomputed entry, so the model stays
  // linear), and every objective or floor pushes them down onto them.
  z3::expr dense = ctx.int_const("dense_ns"), ffn = ctx.int_const("ffn_ns");
  for (int t = 0; t < tab.n_threads; ++t) {
    for (size_t s = 0; s < nS; ++s) {
      const size_t k = static_cast<size_t>(t) * nS + s;
      sink.add(z3::implies(th.vars[t] && lv.vars[s],
                           dense >= Ns(ctx, tab.dense_ns[k]) && ffn >= Ns(ctx, tab.ffn_ns[k])));
    }
  }
  for (size_t c = 0; c < tab.n_cache; ++c) {
    for (size_t s = 0; s < nS; ++s) {
      sink.add(z3::implies(ca.vars[c] && lv.vars[s], ffn >= Ns(ctx, tab.flash_ns[c * nS + s])));
    }
  }
  std::vector<z3::expr> cache_b, extra_b, thread_i;
  for (uint64_t b : tab.cache_bytes) cache_b.push_back(ctx.int_val(b));
  for (uint64_t b : tab.extra_bytes) extra_b.push_back(ctx.int_val(b));
  for (int t = 0; t < tab.n_threads; ++t) thread_i.push_back(ctx.int_val(t));
  Problem p{th,
            ca,
            lv,
            kv,
            dense + ffn,
            ctx.int_val(FixedBytes(in)) + Pick(ctx, ca, cache_b) + Pick(ctx, lv, extra_b) + kv,
            Pick(ctx, th, thread_i)};

  // The request's constraints, tracked so an infeasible one shows in the unsat core.
  sink.add(kv >= ctx.int_val(static_cast<uint64_t>(req.min_kv_bytes)), cn::kMinKv);
  if (on.budget) {
    sink.add(p.memory <= ctx.int_val(static_cast<uint64_t>(req.budget_bytes)), cn::kBudget);
  }
  auto none_of = [&](const OneHot& h, size_t from) {
    z3::expr e = ctx.bool_val(true);
    for (size_t i = from; i < h.vars.size(); ++i) e = e && !h.vars[i];
    return e;
  };
  if (on.threads) sink.add(none_of(th, static_cast<size_t>(req.max_threads)), cn::kThreads);
  if (on.max_sparsity) {
    sink.add(none_of(lv, static_cast<size_t>(LastAllowedLevel(in, req.max_sparsity) + 1)),
             cn::kMaxSparsity);
  }
  if (on.min_speed && req.min_tokens_per_s > 0) {
    sink.add(p.token_ns <= Ns(ctx, 1e9 / req.min_tokens_per_s), cn::kMinSpeed);
  }
  return p;
}

Outcome Solve(z3::context& ctx, const PlanInputs& in, const Tables& tab, const PlanRequest& req,
              Objective objective, const Active& on) {
  z3::optimize opt(ctx);
  Problem p = Build(ctx, opt, in, tab, req, on);
  // Lexicographic objectives (Z3's default priority): the operator's first, then ties broken
  // toward a larger KV pool (speed), less memory, fewer threads.
  if (objective == Objective::kSpeed) {
    opt.minimize(p.token_ns);
    if (req.max_kv_bytes > req.min_kv_bytes) opt.maximize(p.kv);
    opt.minimize(p.memory);
  } else {
    opt.minimize(p.memory);
    opt.minimize(p.token_ns);
  }
  opt.minimize(p.thread_index);

  Outcome out;
  if (opt.check() != z3::sat) {
    z3::expr_vector core = opt.unsat_core();
    for (unsigned i = 0; i < core.size(); ++i) out.core.push_back(core[i].to_string());
    return out;
  }
  z3::model m = opt.get_model();
  out.sat = true;
  out.solution.token_ns = static_cast<double>(m.eval(p.token_ns, true).get_numeral_int64());
  out.solution.threads = p.threads.Chosen(m) + 1;
  out.solution.cache = static_cast<size_t>(p.cache.Chosen(m));
  out.solution.level = static_cast<size_t>(p.level.Chosen(m));
  out.solution.kv_bytes = m.eval(p.kv, true).get_numeral_uint64();
  out.solution.memory_bytes = m.eval(p.memory, true).get_numeral_uint64();
  return out;
}

// Whether a plan strictly better than `best` on the objective exists with the constraints `on`
// (a satisfiability check, far cheaper than optimising again): the test of a binding constraint.
bool Improvable(z3::context& ctx, const PlanInputs& in, const Tables& tab, const PlanRequest& req,
                Objective objective, const Active& on, const Solution& best) {
  z3::solver solver(ctx);
  Problem p = Build(ctx, solver, in, tab, req, on);
  if (objective == Objective::kSpeed) {
    // Better by more than rounding: a nanosecond per token in a thousand.
    const double margin = std::max(1.0, best.token_ns * 1e-3);
    solver.add(p.token_ns < Ns(ctx, best.token_ns - margin));
  } else {
    solver.add(p.memory < ctx.int_val(best.memory_bytes));
  }
  return solver.check() == z3::sat;
}

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
Status Unreachable(z3::context& ctx, const PlanInputs& in, const Tables& tab,
                   const PlanRequest& req, const std::vector<std::string>& core) {
  if (Has(core, cn::kMaxSparsity) && LastAllowedLevel(in, req.max_sparsity) < 0) {
    return InvalidArgument(std::string(cn::kMaxSparsity) + ": no sparsity level is at or below " +
                           Num("%.2f", req.max_sparsity) + " (the lowest is " +
                           Num("%.2f", in.levels.front().sparsity) + ")");
  }
  if (Has(core, cn::kMinSpeed)) {
    Active off;
    off.budget = off.min_speed = false;
    Outcome best = Solve(ctx, in, tab, req, Objective::kSpeed, off);
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

// Without the budget, the least memory (error when nothing works at any budget).
Result<uint64_t> LeastMemory(z3::context& ctx, const PlanInputs& in, const Tables& tab,
                             const PlanRequest& req) {
  Active no_budget;
  no_budget.budget = false;
  Outcome o = Solve(ctx, in, tab, req, Objective::kMemory, no_budget);
  if (!o.sat) return Unreachable(ctx, in, tab, req, o.core);
  return o.solution.memory_bytes;
}

}  // namespace

Result<size_t> MinimumBudget(const PlanInputs& inputs, const PlanRequest& request) {
  SPARROW_RETURN_IF_ERROR(ValidateRequest(inputs, request));
  try {
    const Tables tab = Tabulate(inputs);
    z3::context ctx;
    SPARROW_ASSIGN_OR_RETURN(uint64_t m, LeastMemory(ctx, inputs, tab, request));
    return static_cast<size_t>(m);
  } catch (const z3::exception& e) {
    return Internal(std::string("planner: Z3 failed: ") + e.msg());
  }
}

Result<RunPlan> SolvePlan(const PlanInputs& inputs, const PlanRequest& request) {
  const auto t0 = std::chrono::steady_clock::now();
  SPARROW_RETURN_IF_ERROR(ValidateRequest(inputs, request));
  const PlanInputs& in = inputs;
  try {
    const Tables tab = Tabulate(in);
    const Objective obj = request.objective;
    z3::context ctx;  // one for every solve below: making a context costs more than a solve
    Outcome o = Solve(ctx, in, tab, request, obj, Active{});
    if (!o.sat) {
      if (!Has(o.core, cn::kBudget)) return Unreachable(ctx, in, tab, request, o.core);
      SPARROW_ASSIGN_OR_RETURN(uint64_t least, LeastMemory(ctx, in, tab, request));
      std::string why;
      if (Has(o.core, cn::kMinSpeed)) {
        PlanRequest no_floor = request;
        no_floor.min_tokens_per_s = 0;
        auto floorless = LeastMemory(ctx, in, tab, no_floor);
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
    auto better = [&](const Active& without) {
      return Improvable(ctx, in, tab, request, obj, without, s);
    };
    Active a;
    if (obj == Objective::kSpeed) {
      a = Active{};
      a.budget = false;
      if (better(a)) plan.binding.push_back(cn::kBudget);
    } else if (request.min_tokens_per_s > 0) {
      a = Active{};
      a.min_speed = false;
      if (better(a)) plan.binding.push_back(cn::kMinSpeed);
    }
    if (request.max_threads < in.hw.max_threads) {
      a = Active{};
      a.threads = false;
      if (better(a)) plan.binding.push_back(cn::kThreads);
    }
    if (LastAllowedLevel(in, request.max_sparsity) + 1 < static_cast<int>(in.levels.size())) {
      a = Active{};
      a.max_sparsity = false;
      if (better(a)) plan.binding.push_back(cn::kMaxSparsity);
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
    plan.solve_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return plan;
  } catch (const z3::exception& e) {
    return Internal(std::string("planner: Z3 failed: ") + e.msg());
  }
}

}  // namespace sparrow::plan
