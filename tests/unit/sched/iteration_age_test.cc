// Scheduler::IterationAge, what the service watchdog judges progress by: zero while the step loop
// waits for work, growing while one iteration lasts (here held in a sink the loop calls).
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "engine/sched/scheduler.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

// Holds the scheduler thread in its first OnToken until Release.
class HoldingSink : public RequestSink {
 public:
  bool OnToken(const TokenEvent&) override {
    std::unique_lock<std::mutex> lock(mu_);
    held_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return released_; });
    return true;
  }
  void OnFinish(const FinishInfo&) override {
    std::lock_guard<std::mutex> lock(mu_);
    finished_ = true;
    cv_.notify_all();
  }
  void WaitHeld() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return held_; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  void WaitFinished() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return finished_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false, released_ = false, finished_ = false;
};

TEST(IterationAgeTest, ZeroWhenWaitingGrowingWhileAnIterationLasts) {
  auto model = Model::Load(testing::ModelPath("stories260K.gguf"));
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto tok = LoadTokenizer((*model)->file());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  SchedulerOptions o;
  o.n_ctx = 128;
  o.is_eog = [t = tok->get()](int32_t id) { return t->IsEog(id); };
  Scheduler scheduler(**model, nullptr, o);
  EXPECT_EQ(scheduler.IterationAge().count(), 0);

  auto sink = std::make_shared<HoldingSink>();
  GenerationRequest r;
  r.prompt = (*tok)->Tokenize("Once upon a time", true);
  r.sampling.temperature = 0;
  r.max_tokens = 4;
  r.sink = sink;
  ASSERT_TRUE(scheduler.Submit(std::move(r)).ok());
  sink->WaitHeld();
  const auto first = scheduler.IterationAge();
  EXPECT_GT(first.count(), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GE(scheduler.IterationAge() - first, std::chrono::milliseconds(20));

  sink->Release();
  sink->WaitFinished();
  // Back to waiting for work: zero again once the loop parks (the guard only ends a hang).
  const auto guard = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (scheduler.IterationAge().count() != 0 && std::chrono::steady_clock::now() < guard) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(scheduler.IterationAge().count(), 0) << "the step loop did not go back to waiting";
}

}  // namespace
}  // namespace sparrow
