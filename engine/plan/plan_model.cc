#include "engine/plan/plan_model.h"

#include <algorithm>
#include <cmath>

#include "engine/plan/cost_model.h"

namespace sparrow::plan::detail {
namespace {

namespace cn = constraint;
using Objective = PlanRequest::Objective;

int64_t Ns(double seconds) {
  return static_cast<int64_t>(std::llround(seconds * 1e9));
}

// One choice as one-hot Booleans: exactly one is true.
struct OneHot {
  std::vector<z3::expr> vars;
  size_t Chosen(const z3::model& m) const {
    for (size_t i = 0; i < vars.size(); ++i) {
      if (m.eval(vars[i], true).is_true()) return i;
    }
    return 0;
  }
};

OneHot MakeOneHot(z3::context& ctx, z3::solver& s, const char* name, size_t n) {
  OneHot h;
  z3::expr_vector v(ctx);
  for (size_t i = 0; i < n; ++i) {
    h.vars.push_back(ctx.bool_const((std::string(name) + "_" + std::to_string(i)).c_str()));
    v.push_back(h.vars.back());
  }
  s.add(z3::atleast(v, 1) && z3::atmost(v, 1));
  return h;
}

// The sum of values[i] over the chosen i.
z3::expr Pick(z3::context& ctx, const OneHot& h, const std::vector<uint64_t>& values) {
  z3::expr sum = ctx.int_val(0);
  for (size_t i = 0; i < h.vars.size(); ++i) {
    sum = sum + z3::ite(h.vars[i], ctx.int_val(values[i]), ctx.int_val(0));
  }
  return sum;
}

// The problem's variables, what the objectives read of them, and the literals that switch the
// request's constraints on (named after them, so an unsat core names them).
struct Problem {
  OneHot threads, cache, level;
  z3::expr kv, token_ns, memory, fixed_memory, uncached, thread_index;
  z3::expr budget, max_threads, max_sparsity, min_speed, min_kv;

  z3::expr_vector Assumptions(z3::context& ctx, const Active& on) const {
    z3::expr_vector v(ctx);
    v.push_back(min_kv);
    if (on.budget) v.push_back(budget);
    if (on.threads) v.push_back(max_threads);
    if (on.max_sparsity) v.push_back(max_sparsity);
    if (on.min_speed) v.push_back(min_speed);
    return v;
  }
};

Problem Build(z3::context& ctx, z3::solver& s, const PlanInputs& in, const Tables& tab,
              const PlanRequest& req) {
  const size_t nS = tab.n_levels;
  const OneHot th = MakeOneHot(ctx, s, "threads", static_cast<size_t>(tab.n_threads));
  const OneHot ca = MakeOneHot(ctx, s, "cache", tab.n_cache);
  const OneHot lv = MakeOneHot(ctx, s, "level", nS);
  z3::expr kv = ctx.int_const("kv_bytes");
  s.add(kv <= ctx.int_val(std::max<uint64_t>(req.min_kv_bytes, req.max_kv_bytes)));

  // T = D + max(C, F + miss * C): D and C sit above the entries of the chosen (threads, level)
  // pair, the token time above both sums, so lowering it (or a speed floor) presses them onto
  // the entries. Each term is a two-choice table or a constant times a variable: linear, and
  // far fewer clauses than a table of every triple (which took about twice as long).
  z3::expr dense = ctx.int_const("dense_ns"), comp = ctx.int_const("ffn_ns");
  z3::expr token = ctx.int_const("token_ns");
  for (size_t t = 0; t < th.vars.size(); ++t) {
    for (size_t l = 0; l < nS; ++l) {
      const size_t k = t * nS + l;
      s.add(z3::implies(th.vars[t] && lv.vars[l], dense >= ctx.int_val(tab.dense_ns[k]) &&
                                                      comp >= ctx.int_val(tab.ffn_ns[k])));
    }
  }
  s.add(token >= dense + comp);
  const z3::expr million = ctx.int_val(1000000);
  for (size_t c = 0; c < tab.n_cache; ++c) {
    for (size_t l = 0; l < nS; ++l) {
      const z3::expr flash = ctx.int_val(tab.flash_ns[c * nS + l]);
      s.add(z3::implies(
          ca.vars[c] && lv.vars[l],
          token * million >= (dense + flash) * million + ctx.int_val(tab.miss_ppm[c]) * comp));
    }
  }
  std::vector<uint64_t> thread_i;
  for (int t = 0; t < tab.n_threads; ++t) thread_i.push_back(static_cast<uint64_t>(t));
  const z3::expr fixed = ctx.int_val(tab.fixed_bytes) + Pick(ctx, ca, tab.cache_bytes) +
                         Pick(ctx, lv, tab.extra_bytes);
  std::vector<uint64_t> uncached;  // bytes of bundles the cache leaves on flash
  for (uint64_t b : tab.cache_bytes) uncached.push_back(tab.cache_bytes.back() - b);
  Problem p{th,
            ca,
            lv,
            kv,
            token,
            fixed + kv,
            fixed,
            Pick(ctx, ca, uncached),
            Pick(ctx, th, thread_i),
            ctx.bool_const(cn::kBudget),
            ctx.bool_const(cn::kThreads),
            ctx.bool_const(cn::kMaxSparsity),
            ctx.bool_const(cn::kMinSpeed),
            ctx.bool_const(cn::kMinKv)};

  // The request's constraints, each under its literal.
  s.add(z3::implies(p.min_kv, kv >= ctx.int_val(static_cast<uint64_t>(req.min_kv_bytes))));
  s.add(z3::implies(p.budget, p.memory <= ctx.int_val(static_cast<uint64_t>(req.budget_bytes))));
  auto none_from = [&](const OneHot& h, size_t from) {
    z3::expr e = ctx.bool_val(true);
    for (size_t i = from; i < h.vars.size(); ++i) e = e && !h.vars[i];
    return e;
  };
  s.add(z3::implies(p.max_threads, none_from(th, static_cast<size_t>(req.max_threads))));
  s.add(
      z3::implies(p.max_sparsity,
                  none_from(lv, static_cast<size_t>(LastAllowedLevel(in, req.max_sparsity) + 1))));
  if (req.min_tokens_per_s > 0) {
    s.add(z3::implies(p.min_speed, p.token_ns <= ctx.int_val(Ns(1 / req.min_tokens_per_s))));
  }
  return p;
}

std::vector<int64_t> Distinct(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// Lowers `objective` to the least of `values` (ascending) the solver can satisfy, by bisection
// over incremental checks, then asserts that bound. `m` is a model on entry (its exact value
// `value_of(m)` is one of `values`, or above them all) and the best model on return.
template <typename ValueOf>
void Lower(z3::context& ctx, z3::solver& s, const z3::expr_vector& assumptions,
           const z3::expr& objective, const std::vector<int64_t>& values, z3::model& m,
           ValueOf value_of) {
  auto index = [&](int64_t v) {
    return static_cast<size_t>(std::lower_bound(values.begin(), values.end(), v) - values.begin());
  };
  size_t lo = 0, hi = index(value_of(m));
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    s.push();
    s.add(objective <= ctx.int_val(values[mid]));
    if (s.check(assumptions) == z3::sat) {
      m = s.get_model();
      hi = std::min(mid, index(value_of(m)));
    } else {
      lo = mid + 1;
    }
    s.pop();
  }
  if (hi < values.size()) s.add(objective <= ctx.int_val(values[hi]));
}

}  // namespace

int64_t Tables::TokenNs(int t, size_t c, size_t s) const {
  const size_t k = static_cast<size_t>(t) * n_levels + s;
  // ceil(miss * C): the least whole nanoseconds Z3's token time can take above it.
  const int64_t missed = (miss_ppm[c] * ffn_ns[k] + 999999) / 1000000;
  return dense_ns[k] + std::max(ffn_ns[k], flash_ns[c * n_levels + s] + missed);
}

uint64_t Tables::MemoryBytes(size_t c, size_t s) const {
  return fixed_bytes + cache_bytes[c] + extra_bytes[s];
}

Tables Tabulate(const PlanInputs& in) {
  Tables t;
  t.n_threads = in.hw.max_threads;
  t.n_cache = in.cache.size();
  t.n_levels = in.levels.size();
  t.fixed_bytes = FixedBytes(in);
  const double layers = static_cast<double>(in.n_layer);
  for (int th = 1; th <= t.n_threads; ++th) {
    for (const PlanLevel& l : in.levels) {
      t.dense_ns.push_back(Ns(DenseSeconds(in, th, l)));
      t.ffn_ns.push_back(Ns(FfnComputeSeconds(in, th, l) * layers));
    }
  }
  for (const CachePoint& c : in.cache) {
    t.cache_bytes.push_back(CacheBytes(in, c));
    // A model that is not converted computes every row from memory (cost_model.cc).
    t.miss_ppm.push_back(in.converted ? std::llround(c.miss_rate * 1e6) : 0);
    for (const PlanLevel& l : in.levels) t.flash_ns.push_back(Ns(FlashSeconds(in, c, l) * layers));
  }
  for (const PlanLevel& l : in.levels) t.extra_bytes.push_back(l.extra_bytes);
  return t;
}

int LastAllowedLevel(const PlanInputs& in, double max_sparsity) {
  int last = -1;
  // Profiles store levels as floats (0.05f * 18 is 0.90000004): a float's rounding is no excess.
  for (size_t s = 0; s < in.levels.size(); ++s) {
    if (in.levels[s].sparsity <= max_sparsity + 1e-6) last = static_cast<int>(s);
  }
  return last;
}

struct PlanSolver::State {
  State(const PlanInputs& inputs, const PlanRequest& request)
      : in(inputs), req(request), tab(Tabulate(inputs)), s(ctx), p(Build(ctx, s, in, tab, req)) {
    for (int t = 0; t < tab.n_threads; ++t) {
      threads.push_back(t);
      for (size_t c = 0; c < tab.n_cache; ++c) {
        for (size_t l = 0; l < tab.n_levels; ++l) tokens.push_back(tab.TokenNs(t, c, l));
      }
    }
    for (size_t c = 0; c < tab.n_cache; ++c) {
      for (size_t l = 0; l < tab.n_levels; ++l) {
        fixeds.push_back(static_cast<int64_t>(tab.MemoryBytes(c, l)));
      }
    }
    for (uint64_t b : tab.cache_bytes) uncached.push_back(UncachedBytes(b));
    tokens = Distinct(tokens);
    fixeds = Distinct(fixeds);
    uncached = Distinct(uncached);
  }
  int64_t UncachedBytes(uint64_t cache_bytes) const {
    return static_cast<int64_t>(tab.cache_bytes.back() - cache_bytes);
  }
  int64_t Token(const z3::model& x) const {
    return tab.TokenNs(static_cast<int>(p.threads.Chosen(x)), p.cache.Chosen(x), p.level.Chosen(x));
  }
  int64_t Fixed(const z3::model& x) const {
    return static_cast<int64_t>(tab.MemoryBytes(p.cache.Chosen(x), p.level.Chosen(x)));
  }

  const PlanInputs& in;
  const PlanRequest req;
  const Tables tab;
  z3::context ctx;
  z3::solver s;
  const Problem p;
  std::vector<int64_t> tokens, fixeds, uncached, threads;  // the values each objective takes
};

PlanSolver::PlanSolver(const PlanInputs& in, const PlanRequest& req)
    : state_(std::make_unique<State>(in, req)) {}
PlanSolver::~PlanSolver() = default;
const Tables& PlanSolver::tables() const {
  return state_->tab;
}

Outcome PlanSolver::Solve(Objective objective, const Active& on) {
  State& st = *state_;
  z3::context& ctx = st.ctx;
  z3::solver& s = st.s;
  const Problem& p = st.p;
  const PlanRequest& req = st.req;
  const z3::expr_vector assumptions = p.Assumptions(ctx, on);
  Outcome out;
  if (s.check(assumptions) != z3::sat) {
    const z3::expr_vector core = s.unsat_core();
    for (unsigned i = 0; i < core.size(); ++i) out.core.push_back(core[i].to_string());
    return out;
  }
  z3::model m = s.get_model();
  auto token = [&](const z3::model& x) { return st.Token(x); };
  auto fixed = [&](const z3::model& x) { return st.Fixed(x); };
  s.push();  // the bounds the objectives leave behind are this solve's only
  // Memory apart from the KV pool: the pool is min_kv_bytes in every plan Lower compares (the
  // speed objective grows it afterwards; the memory objective wants it least).
  s.add(p.kv == ctx.int_val(static_cast<uint64_t>(req.min_kv_bytes)));
  if (objective == Objective::kSpeed) {
    Lower(ctx, s, assumptions, p.token_ns, st.tokens, m, token);
    // Of the plans as fast as the model can tell, the one that reads least from flash: the
    // overlap the model counts on is where it is least sure (bench/RESULTS.md, 2026-11-26).
    Lower(ctx, s, assumptions, p.uncached, st.uncached, m, [&](const z3::model& x) {
      return st.UncachedBytes(st.tab.cache_bytes[p.cache.Chosen(x)]);
    });
    Lower(ctx, s, assumptions, p.fixed_memory, st.fixeds, m, fixed);
  } else {
    Lower(ctx, s, assumptions, p.fixed_memory, st.fixeds, m, fixed);
    Lower(ctx, s, assumptions, p.token_ns, st.tokens, m, token);
  }
  Lower(ctx, s, assumptions, p.thread_index, st.threads, m,
        [&](const z3::model& x) { return static_cast<int64_t>(p.threads.Chosen(x)); });
  s.pop();

  Solution& sol = out.solution;
  out.sat = true;
  sol.threads = static_cast<int>(p.threads.Chosen(m)) + 1;
  sol.cache = p.cache.Chosen(m);
  sol.level = p.level.Chosen(m);
  sol.token_ns = st.tab.TokenNs(sol.threads - 1, sol.cache, sol.level);
  const uint64_t rest = st.tab.MemoryBytes(sol.cache, sol.level);
  sol.kv_bytes = req.min_kv_bytes;
  if (objective == Objective::kSpeed && req.max_kv_bytes > req.min_kv_bytes) {
    // The budget left over goes to the KV pool, up to its ceiling.
    const uint64_t room = on.budget && req.budget_bytes > rest ? req.budget_bytes - rest : 0;
    sol.kv_bytes = on.budget ? std::clamp<uint64_t>(room, req.min_kv_bytes, req.max_kv_bytes)
                             : req.max_kv_bytes;
  }
  sol.memory_bytes = rest + sol.kv_bytes;
  return out;
}

bool PlanSolver::Improvable(Objective objective, const Active& on, const Solution& best) {
  State& st = *state_;
  z3::context& ctx = st.ctx;
  st.s.push();
  if (objective == Objective::kSpeed) {
    // Better by more than rounding: a thousandth of the time.
    const int64_t margin = std::max<int64_t>(1, best.token_ns / 1000);
    st.s.add(st.p.token_ns < ctx.int_val(best.token_ns - margin));
  } else {
    st.s.add(st.p.memory < ctx.int_val(best.memory_bytes));
  }
  const bool better = st.s.check(st.p.Assumptions(ctx, on)) == z3::sat;
  st.s.pop();
  return better;
}

}  // namespace sparrow::plan::detail
