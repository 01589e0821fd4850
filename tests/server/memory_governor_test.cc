// MemoryGovernor driving a real scheduler and neuron store: a critical signal from a pressure
// source empties the neuron cache (its memory given back) within a plan; after a quiet spell the
// cache grows back to its ceiling in steps; the operator's budget caps it; the host app's
// onTrimMemory level acts like any source. The source is an eventfd the test writes to: the same
// descriptor kind the cgroup v1 source polls.
#include "server/core/memory_governor.h"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "engine/kernels/thread_pool.h"
#include "engine/sparse/sparse_plan.h"
#include "tests/util/converted_model.h"

namespace sparrow::server {
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
    o.neuron_store = plan_->store;
    scheduler_ = std::make_unique<Scheduler>(*model_, &pool_, o);
    fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  }
  void TearDown() override { close(fd_); }

  std::unique_ptr<MemoryGovernor> Start() {
    std::vector<std::unique_ptr<PressureSource>> sources;
    sources.push_back(std::make_unique<ScriptedPressureSource>(fd_, &level_));
    BudgetPolicyOptions p;
    p.ceiling_bytes = all_;
    p.floor_bytes = 0;
    p.quiet_ms = 1000;
    p.grow_every_ms = 20;
    p.grow_fraction = 0.25;
    return std::make_unique<MemoryGovernor>(scheduler_.get(), std::move(sources), p, 10);
  }
  void Signal(PressureLevel level) {
    level_ = static_cast<int>(level);
    const uint64_t one = 1;
    ASSERT_EQ(write(fd_, &one, sizeof(one)), 8);
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
  Signal(PressureLevel::kCritical);
  const NeuronStoreStats squeezed = WaitForCapacity(0);
  EXPECT_EQ(squeezed.hot_bytes + squeezed.cache.mapped_bytes, 0u);
  MemoryGovernorStats st = g->stats();
  EXPECT_EQ(st.budget_bytes, 0u);
  EXPECT_EQ(st.shrinks, 1);
  EXPECT_GE(scheduler_->Stats().memory_plan_version, 1);
  // Quiet: back to the ceiling in steps of a quarter.
  WaitForCapacity(all_);
  st = g->stats();
  EXPECT_GE(st.grows, 4);
  EXPECT_EQ(st.plan_version, 1 + st.grows);
  EXPECT_EQ(st.level, PressureLevel::kNone);
}

TEST_F(MemoryGovernorTest, TheOperatorsBudgetAndTheHostAppsLevelsAct) {
  auto g = Start();
  g->SetOperatorBudget(all_ / 4);
  WaitForCapacity(all_ / 4);
  EXPECT_EQ(g->stats().operator_changes, 1);
  g->Report(*PressureFromTrimMemory("RUNNING_LOW"), "host app");  // medium: half
  WaitForCapacity(all_ / 4 / 2);
  g->SetOperatorBudget(std::nullopt);
  WaitForCapacity(all_);  // grows back past the cleared budget, to the ceiling
}

}  // namespace
}  // namespace sparrow::server
