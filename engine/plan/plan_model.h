#pragma once
// Internal to engine/plan: the planning problem as a Z3 model, and its solution. The cost model
// (cost_model.h) is tabulated over every choice in integer nanoseconds and bytes, each choice
// is a one-hot set of Booleans, and the objectives are lowered one after another
// (lexicographically) by bisection over the values they can take, each step an incremental
// satisfiability check. Z3's own optimizer (z3::optimize) found the same optima in 80-300 ms
// where this takes 30-65 ms (a 19-level, 12-point, 8-thread model, binding checks included).
// A PlanSolver owns its z3::context, which is not thread-safe: one per thread.
#include <z3++.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/plan/planner.h"

namespace sparrow::plan::detail {

// The cost model over every choice. Products of inputs (an active share, a thread count's rate,
// a miss rate) are table entries, so the Z3 model stays linear.
struct Tables {
  int n_threads = 0;
  size_t n_cache = 0, n_levels = 0;
  // T = D + max(C, F + miss * C) (cost_model.h) in whole nanoseconds, the miss rate in
  // millionths: what Z3 sees, and TokenNs computes the same way.
  std::vector<int64_t> dense_ns, ffn_ns;  // [t * n_levels + s], per token (ffn: all layers)
  std::vector<int64_t> flash_ns;          // [c * n_levels + s], all layers
  std::vector<int64_t> miss_ppm;          // [c]
  std::vector<uint64_t> cache_bytes;      // [c]
  std::vector<uint64_t> extra_bytes;      // [s]
  uint64_t fixed_bytes = 0;

  int64_t TokenNs(int t, size_t c, size_t s) const;  // t: thread index (threads - 1)
  uint64_t MemoryBytes(size_t c, size_t s) const;    // without the KV pool
};
Tables Tabulate(const PlanInputs& in);

// Which of the request's constraints a solve asserts.
struct Active {
  bool budget = true, threads = true, min_speed = true, max_sparsity = true;
};

struct Solution {
  int threads = 1;
  size_t cache = 0, level = 0;
  uint64_t kv_bytes = 0;
  int64_t token_ns = 0;
  uint64_t memory_bytes = 0;  // KV pool included
};

struct Outcome {
  bool sat = false;
  Solution solution;
  std::vector<std::string> core;  // unsat: the tracked constraints in conflict
};

// The last level index within max_sparsity, or -1 when none is.
int LastAllowedLevel(const PlanInputs& in, double max_sparsity);

// The planning problem for one set of inputs and one request, built once; each request
// constraint is switched on by an assumption literal, so the solves below share one solver (and
// what it learnt) instead of building the model again. Not thread-safe.
class PlanSolver {
 public:
  PlanSolver(const PlanInputs& in, const PlanRequest& req);
  ~PlanSolver();
  PlanSolver(const PlanSolver&) = delete;
  PlanSolver& operator=(const PlanSolver&) = delete;

  const Tables& tables() const;

  // The best plan under the constraints `on`: speed (least time, then the largest cache, then
  // least memory, then fewest threads; the KV pool then takes the budget left, up to max_kv_bytes)
  // or memory (least memory, then least time, then fewest threads). Unsat: the core names the
  // constraints in conflict.
  Outcome Solve(PlanRequest::Objective objective, const Active& on);

  // Whether a plan strictly better than `best` on the objective exists under `on` (one
  // satisfiability check): the test of a binding constraint.
  bool Improvable(PlanRequest::Objective objective, const Active& on, const Solution& best);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace sparrow::plan::detail
