// MemoryGovernor driving a real scheduler and neuron store: a critical signal from a pressure
// source empties the neuron cache (its memory given back) and takes the KV pool to one context
// within a plan; after a quiet spell both grow back to their ceiling in steps; the operator's
// budget caps them; the host app's onTrimMemory level acts like any source. The source is an
// eventfd the test writes to: the same descriptor kind the cgroup v1 source polls.
#include "engine/control/memory_governor.h"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "engine/control/budget_planner.h"
#include "engine/kernels/thread_pool.h"
#include "engine/sparse/sparse_plan.h"
#include "tests/unit/plan/plan_fixture.h"
#include "tests/util/collecting_sink.h"
#include "tests/util/converted_model.h"

namespace sparrow {
namespace {

class ScriptedPressureSource : public PressureSource {
 public:
  ScriptedPressureSource(int fd, std::atomic<int>* level) : fd_(fd), level_(level) {}
  std::string_view name() const override { return "scripted"; }
  std::vector<pollfd> fds() const override { return {{fd_, POLLIN, 0}}; }
  PressureReading Read(int fired) override {
    if (fired < 0) return {};  // the tick: news come only through the descriptor
    uint64_t n = 0;
    (void)!read(fd_, &n, sizeof(n));
    return {static_cast<PressureLevel>(level_->load()), "the test"};
  }

 private:
  int fd_;
  std::atomic<int>* level_;
};

class MemoryGovernorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = testing::WriteConvertedSyntheticModel("governor", TensorType::kQ8_0);
    auto m = Model::Load(path_);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value();
    all_ = model_->weights().bundles->bundle_bytes();
    SparsityOptions so;
    so.cache_bytes = all_;
    auto plan = MakeSparsePlan(*model_, so, &pool_);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    plan_ = *plan;
    SchedulerOptions o;
    o.is_eog = [](int32_t) { return false; };
    o.make_ffn = [p = plan_](const Model& model, kernels::ThreadPool* tp) {
      return MakeFeedForward(model, p, tp);
    };
    o.memory_users.push_back(plan_->store);
    scheduler_ = std::make_unique<Scheduler>(*model_, &pool_, o);
    fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  }
  void TearDown() override { close(fd_); }

  std::unique_ptr<MemoryGovernor> Start(PlanFn planner = nullptr) {
    std::vector<std::unique_ptr<PressureSource>> sources;
    sources.push_back(std::make_unique<ScriptedPressureSource>(fd_, &level_));
    MemoryGovernorOptions o;
    o.policy.quiet_ms = 1000;
    o.policy.grow_every_ms = 20;
    o.policy.grow_fraction = 0.25;
    o.tick_ms = 10;
    o.planner = std::move(planner);
    return std::make_unique<MemoryGovernor>(scheduler_.get(), std::move(sources), Budget(),
                                            std::move(o));
  }
  // The consumers as sparrowd counts them; weights and scratch are fixed here.
  MemoryBudget Budget() const {
    MemoryConsumers c;
    c.weights_bytes = 1 << 20;
    c.scratch_bytes = 1 << 16;
    const auto block = static_cast<uint64_t>(scheduler_->kv_block_bytes());
    c.kv_min_bytes = block * static_cast<uint64_t>(scheduler_->min_kv_blocks());
    c.kv_max_bytes = block * static_cast<uint64_t>(scheduler_->options().kv_blocks);
    c.cache_max_bytes = all_;
    return MemoryBudget(c);
  }
  void Signal(PressureLevel level) {
    level_ = static_cast<int>(level);
    const uint64_t one = 1;
    ASSERT_EQ(write(fd_, &one, sizeof(one)), 8);
  }
  // Waits until the scheduler has applied plan `version` (a minute at most).
  SchedulerStats WaitForPlan(int64_t version) {
    SchedulerStats s = scheduler_->Stats();
    for (int i = 0; i < 30000 && s.memory_plan_version < version; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      s = scheduler_->Stats();
    }
    EXPECT_GE(s.memory_plan_version, version);
    return s;
  }
  // Waits until the store's capacity is `bytes` (a minute at most: a hang would say nothing).
  NeuronStoreStats WaitForCapacity(size_t bytes) {
    SchedulerStats s = scheduler_->Stats();
    for (int i = 0; i < 30000 && s.neuron_cache->capacity_bytes != bytes; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      s = scheduler_->Stats();
    }
    EXPECT_EQ(s.neuron_cache->capacity_bytes, bytes);
    return *s.neuron_cache;
  }

  std::string path_;
  std::unique_ptr<Model> model_;
  kernels::ThreadPool pool_{2};
  std::shared_ptr<const SparsePlan> plan_;
  std::unique_ptr<Scheduler> scheduler_;
  size_t all_ = 0;
  int fd_ = -1;
  std::atomic<int> level_{0};
};

TEST_F(MemoryGovernorTest, CriticalEmptiesTheCacheAndQuietGrowsItBack) {
  auto g = Start();
  EXPECT_EQ(g->stats().sources, std::vector<std::string>{"scripted"});
  EXPECT_GT(scheduler_->Stats().neuron_cache->hot_bytes, 0u);
  const MemoryBudget budget = Budget();
  EXPECT_EQ(g->stats().budget_bytes, budget.ceiling());
  EXPECT_GT(scheduler_->options().kv_blocks, scheduler_->min_kv_blocks());
  Signal(PressureLevel::kCritical);
  const NeuronStoreStats squeezed = WaitForCapacity(0);
  EXPECT_EQ(squeezed.hot_bytes + squeezed.cache.mapped_bytes, 0u);
  MemoryGovernorStats st = g->stats();
  EXPECT_EQ(st.budget_bytes, budget.floor());
  EXPECT_EQ(st.split.kv_pool, budget.consumers().kv_min_bytes);
  EXPECT_EQ(st.split.neuron_cache, 0u);
  EXPECT_EQ(st.shrinks, 1);
  // The store's capacity is live; the scheduler's own figures follow once the plan is done.
  SchedulerStats ss = WaitForPlan(st.plan_version);
  EXPECT_EQ(ss.kv.total_blocks, scheduler_->min_kv_blocks());
  // Quiet: back to the ceiling in steps of a quarter.
  WaitForCapacity(all_);
  ss = scheduler_->Stats();
  for (int i = 0; i < 30000 && ss.kv.total_blocks != scheduler_->options().kv_blocks; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ss = scheduler_->Stats();
  }
  EXPECT_EQ(ss.kv.total_blocks, scheduler_->options().kv_blocks);
  st = g->stats();
  EXPECT_EQ(st.budget_bytes, budget.ceiling());
  EXPECT_GE(st.grows, 4);
  EXPECT_EQ(st.plan_version, 1 + st.grows);
  EXPECT_EQ(st.level, PressureLevel::kNone);
}

// Critical pressure empties the neuron cache at once, while steps run, not after the step in
// flight; the streams decoding meanwhile produce what they do without it (their records come
// from flash instead), and the shortcut never grows the cache.
TEST_F(MemoryGovernorTest, ACriticalShrinkActsAtOnceAndLeavesTheStreamsAsTheyWere) {
  auto run = [&](bool shrink) {
    std::vector<std::shared_ptr<testing::CollectingSink>> sinks;
    for (int32_t i = 0; i < 3; ++i) {
      auto sink = std::make_shared<testing::CollectingSink>();
      GenerationRequest r;
      r.prompt = {1, 7 + i, 20 + i};
      r.sampling.temperature = 0;
      r.max_tokens = 48;
      r.sink = sink;
      EXPECT_TRUE(scheduler_->Submit(std::move(r)).ok());
      sinks.push_back(sink);
    }
    if (shrink) {
      while (sinks[0]->count() < 4) std::this_thread::yield();
      MemoryPlan urgent;
      urgent.version = 1;
      urgent.bytes.Set(MemoryUserKind::kNeuronCache, 0);
      urgent.urgent = true;
      scheduler_->ApplyMemoryPlan(urgent);
      const NeuronStoreStats now = *scheduler_->Stats().neuron_cache;
      EXPECT_EQ(now.capacity_bytes, 0u) << "done when the call returns";
      EXPECT_EQ(now.hot_bytes, 0u) << "the hot segment's pages went back";
      EXPECT_TRUE(plan_->store->ShrinkNow(all_));
      EXPECT_EQ(scheduler_->Stats().neuron_cache->capacity_bytes, 0u) << "only ever down";
    }
    std::vector<std::vector<int32_t>> out;
    for (auto& s : sinks) out.push_back(s->Wait());
    return out;
  };
  const auto reference = run(false);
  const auto squeezed = run(true);
  ASSERT_EQ(reference.size(), 3u);
  EXPECT_EQ(reference[0].size(), 48u);
  EXPECT_EQ(squeezed, reference);
}

TEST_F(MemoryGovernorTest, TheOperatorsBudgetAndTheHostAppsLevelsAct) {
  auto g = Start();
  const MemoryBudget budget = Budget();
  // A budget for the whole process: the weights, the scratch and one context of KV, and a
  // quarter of the neurons.
  const uint64_t total = budget.floor() + all_ / 4;
  g->SetOperatorBudget(total);
  WaitForCapacity(all_ / 4);
  MemoryGovernorStats st = g->stats();
  EXPECT_EQ(st.operator_changes, 1);
  EXPECT_EQ(st.operator_budget_bytes, total);
  EXPECT_EQ(st.budget_bytes, total);
  g->Report(*PressureFromTrimMemory("RUNNING_LOW"), "host app");  // medium: half the elastic part
  const MemorySplit half = budget.Split(budget.ElasticFor(total) / 2);
  WaitForCapacity(half.neuron_cache);
  EXPECT_EQ(g->stats().split.kv_pool, half.kv_pool);
  g->SetOperatorBudget(std::nullopt);
  WaitForCapacity(all_);  // grows back past the cleared budget, to the ceiling
}

// The plan's sparsity level reaches the FFN's SparsityLevel (a threshold policy's levels, here
// given to this model's plan without thresholds: the level moves, its predictor ignores it),
// clamped to the levels there are.
TEST_F(MemoryGovernorTest, ThePlansSparsityLevelReachesTheScheduler) {
  SchedulerOptions o = scheduler_->options();
  scheduler_.reset();
  auto levelled = std::make_shared<SparsePlan>(*plan_);
  levelled->levels = std::make_shared<SparsityLevel>(
      std::vector<ThresholdLevel>{{0, {}}, {0.25, {1}}, {0.5, {2}}}, 2);
  o.make_ffn = [p = std::shared_ptr<const SparsePlan>(levelled)](const Model& model,
                                                                 kernels::ThreadPool* tp) {
    return MakeFeedForward(model, p, tp);
  };
  scheduler_ = std::make_unique<Scheduler>(*model_, &pool_, o);
  EXPECT_EQ(scheduler_->Stats().sparsity, 0.5);
  std::atomic<double> sparsity{0.25};
  PlanFn planner = [&](uint64_t bytes) -> Result<plan::RunPlan> {
    plan::RunPlan r;
    r.threads = 2;
    r.neuron_cache_bytes = all_;
    r.kv_pool_bytes = bytes;
    r.sparsity = sparsity;
    return r;
  };
  auto g = Start(planner);
  EXPECT_EQ(WaitForPlan(1).sparsity, 0.25);
  sparsity = 0.9;
  EXPECT_EQ(WaitForPlan(g->Replan("test")).sparsity, 0.5);
}

// The real planner on this model, with hand-written rates (two threads twice as fast as one):
// every budget is planned (those under pressure once it is quiet), the plan's threads reach the
// pool and its cache the store.
TEST_F(MemoryGovernorTest, WithAPlannerEveryBudgetIsPlannedAndApplied) {
  const MemoryBudget budget = Budget();
  // The planner sparrowd uses, on this model and scheduler.
  BudgetPlannerOptions bo;
  bo.hardware = plan::testing::TwoThreadHardware();
  bo.active_share = 0.25;
  bo.max_threads = 2;
  const PlanFn budget_planner =
      MakeBudgetPlanner(bo, *model_, *scheduler_, plan_, budget.consumers());
  std::atomic<int> calls{0};
  std::atomic<uint64_t> asked{0};  // the last budget planned (the monitor's thread writes it)
  PlanFn planner = [&](uint64_t bytes) -> Result<plan::RunPlan> {
    asked = bytes;
    ++calls;
    return budget_planner(bytes);
  };
  pool_.set_active_threads(1);
  auto g = Start(planner);
  MemoryGovernorStats st = g->stats();
  ASSERT_TRUE(st.run_plan.has_value()) << st.plan_error;
  EXPECT_EQ(calls.load(), 1) << "planned from the start";
  EXPECT_EQ(st.run_plan->threads, 2) << "two threads are faster here";
  WaitForCapacity(all_);
  for (int i = 0; i < 1000 && pool_.active_threads() != 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(pool_.active_threads(), 2) << "the plan's thread count reached the pool";

  // Critical: the floor at once, by the budget's own split: no solver (and its heap) while the
  // device is short of memory.
  const int before_pressure = calls.load();
  Signal(PressureLevel::kCritical);
  WaitForCapacity(0);
  st = g->stats();
  EXPECT_FALSE(st.run_plan.has_value());
  EXPECT_NE(st.plan_error.find("once it is quiet"), std::string::npos) << st.plan_error;
  EXPECT_EQ(st.budget_bytes, budget.floor());
  EXPECT_EQ(calls.load(), before_pressure) << "not planned under pressure";
  // Once quiet, the budget is planned again.
  for (int i = 0;
       i < 30000 && (g->stats().level != PressureLevel::kNone || calls.load() == before_pressure);
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_GT(calls.load(), before_pressure);
  // The operator allows half the neurons more: the plan takes what its cache points offer
  // within that.
  const uint64_t allowed = budget.floor() + all_ / 2;
  g->SetOperatorBudget(allowed);
  for (int i = 0; i < 30000 && asked.load() != allowed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(asked.load(), allowed);
  st = g->stats();
  ASSERT_TRUE(st.run_plan.has_value()) << st.plan_error;
  EXPECT_LE(st.run_plan->neuron_cache_bytes, all_ / 2);
  EXPECT_EQ(st.split.neuron_cache, st.run_plan->neuron_cache_bytes);
  WaitForCapacity(st.split.neuron_cache);
}

}  // namespace
}  // namespace sparrow
