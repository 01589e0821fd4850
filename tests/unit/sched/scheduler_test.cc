// The scheduler on a real model (stories260K): batching must not change greedy results,
// prefix blocks are reused, preemption and cancellation keep every request whole.
#include "engine/sched/scheduler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "engine/kernels/thread_pool.h"
#include "engine/memory/memory_budget.h"
#include "engine/runtime/generate.h"
#include "engine/sparse/ffn_factory.h"
#include "engine/sparse/sparse_plan.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/util/converted_model.h"
#include "tests/util/fault_env.h"
#include "tests/util/golden.h"
#include "tests/util/synthetic_arch.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

class CollectingSink : public RequestSink {
 public:
  explicit CollectingSink(int cancel_after = -1) : cancel_after_(cancel_after) {}
  bool OnToken(const TokenEvent& ev) override {
    std::lock_guard<std::mutex> lock(mu_);
    tokens_.push_back(ev.token);
    events_.push_back(ev);
    return true;
  }
  void OnFinish(const FinishInfo& info) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      info_ = info;
      done_ = true;
      ++finish_calls_;
    }
    cv_.notify_all();
  }
  bool Cancelled() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return cancel_after_ >= 0 && static_cast<int>(tokens_.size()) >= cancel_after_;
  }
  FinishInfo Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
    return info_;
  }
  std::vector<int32_t> tokens() {
    std::lock_guard<std::mutex> lock(mu_);
    return tokens_;
  }
  std::vector<TokenEvent> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  int finish_calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return finish_calls_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int32_t> tokens_;
  std::vector<TokenEvent> events_;
  FinishInfo info_;
  bool done_ = false;
  int finish_calls_ = 0;
  int cancel_after_;
};

MemoryPlan CachePlan(int64_t version, size_t cache_bytes, const std::string& cause) {
  MemoryPlan p;
  p.version = version;
  p.bytes.Set(MemoryUserKind::kNeuronCache, cache_bytes);
  p.cause = cause;
  p.decided = std::chrono::steady_clock::now();
  return p;
}

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = Model::Load(testing::ModelPath("stories260K.gguf"));
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value();
    auto t = LoadTokenizer(model_->file());
    ASSERT_TRUE(t.ok());
    tok_ = std::move(t).value();
  }

  SchedulerOptions Options() {
    SchedulerOptions o;
    o.n_ctx = 256;
    o.is_eog = [this](int32_t id) { return tok_->IsEog(id); };
    return o;
  }

  // PowerInfer's bamboo model converted to neuron bundles (model_ from now on), and options whose
  // FFN reads them through a NeuronStore of `cache_bytes` (SIZE_MAX: all) opened on `env`;
  // nullopt (the test skips) where the shared file is missing.
  // `src` converted (default: PowerInfer's bamboo), its FFN (or experts) on flash behind a
  // cache of `cache_bytes` (SIZE_MAX: all of it).
  std::optional<SchedulerOptions> FlashOptions(const std::string& name, size_t cache_bytes,
                                               Env* env, kernels::ThreadPool* pool,
                                               std::string src = "") {
    if (src.empty()) src = testing::SharedDir() + "/pwri/models/pwri-bamboo-q4_0.gguf";
    if (!testing::FileExists(src)) return std::nullopt;
    const std::string converted = testing::ConvertedCopy(src, name);
    EXPECT_FALSE(converted.empty());
    auto m = Model::Load(converted);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    if (!m.ok()) return std::nullopt;
    model_ = std::move(m).value();
    SparsityOptions so;
    so.cache_bytes =
        cache_bytes == SIZE_MAX ? model_->weights().bundles->bundle_bytes() : cache_bytes;
    so.store.env = env;
    auto plan = MakeSparsePlan(*model_, so, pool);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    if (!plan.ok()) return std::nullopt;
    SchedulerOptions o = Options();
    o.step_token_budget = 7;
    o.make_ffn = [p = *plan](const Model& model, kernels::ThreadPool* tp) {
      return MakeFeedForward(model, p, tp);
    };
    o.memory_users.push_back((*plan)->store);
    return o;
  }

  GenerationRequest Greedy(const std::string& text, int64_t max_tokens,
                           std::shared_ptr<RequestSink> sink) {
    GenerationRequest r;
    r.prompt = tok_->Tokenize(text, true);
    r.sampling.temperature = 0;
    r.max_tokens = max_tokens;
    r.sink = std::move(sink);
    return r;
  }

  // n greedy requests over four prompts in turn, submitted together; returns once all ended.
  std::vector<std::shared_ptr<CollectingSink>> RunFaultPrompts(Scheduler& s, int n,
                                                               int64_t max_tokens) {
    std::vector<std::shared_ptr<CollectingSink>> sinks;
    for (int i = 0; i < n; ++i) {
      sinks.push_back(std::make_shared<CollectingSink>());
      EXPECT_TRUE(s.Submit(Greedy(FaultPrompt(i), max_tokens, sinks.back())).ok());
    }
    for (auto& sink : sinks) sink->Wait();
    return sinks;
  }
  // A run of RunFaultPrompts while reads fail: each request ended once, either with an I/O error
  // naming `file` or exactly as alone. Returns how many failed.
  int CheckFaultedRun(const std::vector<std::shared_ptr<CollectingSink>>& sinks, int64_t max_tokens,
                      const std::string& file) {
    int failed = 0;
    for (size_t i = 0; i < sinks.size(); ++i) {
      const FinishInfo info = sinks[i]->Wait();
      EXPECT_EQ(sinks[i]->finish_calls(), 1);
      if (info.reason == FinishReason::kError) {
        ++failed;
        EXPECT_EQ(info.status.code(), StatusCode::kIoError);
        EXPECT_NE(info.status.message().find(file), std::string::npos) << info.status.ToString();
      } else {
        EXPECT_EQ(sinks[i]->tokens(), Alone(FaultPrompt(i), max_tokens)) << "request " << i;
      }
    }
    return failed;
  }
  static std::string FaultPrompt(size_t i) {
    static const char* kPrompts[] = {"Once upon a time", "The little dog",
                                     "Lily and Ben went to the park.", "One day, a cat"};
    return kPrompts[i % 4];
  }

  // The same request through the single-sequence loop, as the reference.
  std::vector<int32_t> Alone(const std::string& text, int64_t max_tokens) {
    ForwardPass fp(*model_, nullptr, MakeDefaultFeedForward(*model_, nullptr));
    ContiguousKvCache cache(model_->config().n_layer, 256, model_->config().kv_dim());
    GenerateOptions o;
    o.max_tokens = max_tokens;
    o.sampling.temperature = 0;
    std::vector<int32_t> out;
    auto prompt = tok_->Tokenize(text, true);
    auto st = Generate(
        fp, cache, prompt, o, [this](int32_t id) { return tok_->IsEog(id); },
        [&](int32_t id) {
          out.push_back(id);
          return true;
        });
    EXPECT_TRUE(st.ok());
    return out;
  }

  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(SchedulerTest, GreedyRequestMatchesLlamaCpp) {
  auto g = testing::LoadGolden(testing::TestdataPath("golden/stories260K.json"));
  Scheduler s(*model_, nullptr, Options());
  auto sink = std::make_shared<CollectingSink>();
  auto req = Greedy(g.prompts[0].prompt, 48, sink);
  EXPECT_EQ(req.prompt, g.prompts[0].prompt_tokens);
  ASSERT_TRUE(s.Submit(std::move(req)).ok());
  FinishInfo info = sink->Wait();
  EXPECT_EQ(info.reason, FinishReason::kLength);
  EXPECT_EQ(sink->tokens(), g.prompts[0].generated_tokens);
  EXPECT_EQ(info.prompt_tokens, 5);
  EXPECT_EQ(info.completion_tokens, 48);
  EXPECT_EQ(s.Stats().kv.used_blocks, 0);
  EXPECT_EQ(s.Stats().ffn_mode, "dense");
  EXPECT_GT(s.Stats().ffn.neurons_total, 0);
  EXPECT_EQ(s.Stats().ffn.neurons_computed, s.Stats().ffn.neurons_total);
}

TEST_F(SchedulerTest, SixteenConcurrentRequestsEqualEachAlone) {
  const std::vector<std::string> prompts = {"Once upon a time",
                                            "The little dog",
                                            "Lily and Ben went to the park.",
                                            "Tom had a big red ball",
                                            "",
                                            "One day, a cat"};
  kernels::ThreadPool pool(2);
  SchedulerOptions o = Options();
  o.step_token_budget = 7;  // forces chunked prefill next to decoding sequences
  Scheduler s(*model_, &pool, o);
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  for (int i = 0; i < 16; ++i) {
    sinks.push_back(std::make_shared<CollectingSink>());
    ASSERT_TRUE(s.Submit(Greedy(prompts[i % prompts.size()], 20 + i, sinks.back())).ok());
  }
  for (int i = 0; i < 16; ++i) {
    sinks[i]->Wait();
    EXPECT_EQ(sinks[i]->tokens(), Alone(prompts[i % prompts.size()], 20 + i)) << "request " << i;
    EXPECT_EQ(sinks[i]->finish_calls(), 1);
  }
  SchedulerStats st = s.Stats();
  EXPECT_EQ(st.requests_finished, 16);
  EXPECT_EQ(st.kv.used_blocks, 0);
  EXPECT_LT(st.steps, 16 * 40) << "requests were batched";
}

// A sparse model (PowerInfer's file, its predictor choosing neurons) under continuous batching:
// decoded tokens share steps with prompt chunks and with each other, and every request still
// gets exactly what it gets alone.
TEST_F(SchedulerTest, SparseModelRequestsEqualEachAlone) {
  const std::string path = testing::SharedDir() + "/pwri/models/pwri-bamboo-q4_0.gguf";
  if (!testing::FileExists(path)) GTEST_SKIP() << path << " is missing";
  auto m = Model::Load(path);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  model_ = std::move(m).value();  // same tokenizer as stories260K
  const std::vector<std::string> prompts = {"Once upon a time", "The little dog",
                                            "Lily and Ben went to the park.", ""};
  kernels::ThreadPool pool(2);
  SchedulerOptions o = Options();
  o.step_token_budget = 7;
  Scheduler s(*model_, &pool, o);
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  for (int i = 0; i < 8; ++i) {
    sinks.push_back(std::make_shared<CollectingSink>());
    ASSERT_TRUE(s.Submit(Greedy(prompts[i % prompts.size()], 12 + i, sinks.back())).ok());
  }
  for (int i = 0; i < 8; ++i) {
    sinks[i]->Wait();
    EXPECT_EQ(sinks[i]->tokens(), Alone(prompts[i % prompts.size()], 12 + i)) << "request " << i;
  }
  const SchedulerStats st = s.Stats();
  EXPECT_EQ(st.kv.used_blocks, 0);
  // What /metrics reports: the predictor's share of neurons over the decoded tokens.
  EXPECT_EQ(st.ffn_mode, "predictor");
  EXPECT_GT(st.ffn.decode_tokens, 0);
  EXPECT_GT(st.ffn.neurons_computed, st.ffn.neurons_total / 5);
  EXPECT_LT(st.ffn.neurons_computed, st.ffn.neurons_total * 4 / 5);
}

// The same sparse model converted to neuron bundles, its FFN read from flash on every use (no
// cache): requests equal each alone. Then reads of some records fail: the requests whose tokens
// needed them fail with the file named and their KV freed, the others finish exactly, and once
// the disk is healthy again the server serves new requests.
TEST_F(SchedulerTest, FlashReadFailuresFailOnlyTheRequestsThatNeededThem) {
  kernels::ThreadPool pool(2);
  testing::FaultyEnv env;
  const std::optional<SchedulerOptions> o = FlashOptions("sched-bamboo", 0, &env, &pool);
  if (!o) GTEST_SKIP() << "pwri-bamboo-q4_0.gguf is missing";
  const std::string converted = model_->file().path();
  Scheduler s(*model_, &pool, *o);
  auto run = [&](int n, int64_t max_tokens) { return RunFaultPrompts(s, n, max_tokens); };
  for (auto& sink : run(4, 12)) EXPECT_EQ(sink->Wait().reason, FinishReason::kLength);

  // One record of the middle layer (with the records read in the same run as it) fails.
  const LayerBundles& lb = model_->weights().bundles->layers[model_->config().n_layer / 2];
  const uint64_t bad = lb.file_offset + 3 * lb.record_bytes;
  env.faults().Set(bad, bad + 1);
  auto sinks = run(8, 16);
  const int failed = CheckFaultedRun(sinks, 16, converted);
  const int finished = static_cast<int>(sinks.size()) - failed;
  EXPECT_GT(failed, 0);
  EXPECT_GT(env.faults().injected, 0);
  SchedulerStats st = s.Stats();
  EXPECT_EQ(st.kv.used_blocks, 0);
  EXPECT_EQ(st.requests_failed, failed);
  ASSERT_TRUE(st.neuron_cache.has_value());
  EXPECT_GT(st.neuron_cache->reads.failed_reads, 0);
  std::printf("[flash faults] %d of 8 requests failed, %d finished\n", failed, finished);

  env.faults().Clear();
  sinks = run(4, 12);
  for (size_t i = 0; i < sinks.size(); ++i) {
    EXPECT_EQ(sinks[i]->Wait().reason, FinishReason::kLength);
    EXPECT_EQ(sinks[i]->tokens(), Alone(FaultPrompt(i), 12)) << "request " << i;
  }
  EXPECT_EQ(s.Stats().kv.used_blocks, 0);
}

// A mixture-of-experts model converted to expert bundles, every expert read from flash when
// used (no cache): requests equal each alone; then one expert's record fails to read: the
// requests whose tokens were routed to it fail, naming the file, the others finish exactly.
TEST_F(SchedulerTest, ExpertReadFailuresFailOnlyTheRequestsRoutedToThem) {
  kernels::ThreadPool pool(2);
  testing::FaultyEnv env;
  const std::string src = testing::TempPath("sched-olmoe-src.gguf");
  ASSERT_TRUE(testing::WriteArchModel({testing::ArchFamily::kOlmoe, 5}, src).ok());
  const std::optional<SchedulerOptions> o = FlashOptions("sched-olmoe", 0, &env, &pool, src);
  ASSERT_TRUE(o.has_value());
  ASSERT_TRUE(model_->weights().bundles->experts);
  Scheduler s(*model_, &pool, *o);
  auto run = [&](int n, int64_t max_tokens) { return RunFaultPrompts(s, n, max_tokens); };
  for (auto& sink : run(4, 12)) EXPECT_EQ(sink->Wait().reason, FinishReason::kLength);
  EXPECT_EQ(s.Stats().ffn_mode, "experts-on-flash");

  const LayerBundles& lb = model_->weights().bundles->layers[1];
  const uint64_t bad = lb.file_offset + 5 * lb.record_bytes;
  env.faults().Set(bad, bad + 1);
  auto sinks = run(8, 16);
  const int failed = CheckFaultedRun(sinks, 16, model_->file().path());
  EXPECT_GT(failed, 0);
  EXPECT_EQ(s.Stats().kv.used_blocks, 0);
  EXPECT_EQ(s.Stats().requests_failed, failed);

  env.faults().Clear();
  sinks = run(4, 12);
  for (size_t i = 0; i < sinks.size(); ++i) {
    EXPECT_EQ(sinks[i]->Wait().reason, FinishReason::kLength);
    EXPECT_EQ(sinks[i]->tokens(), Alone(FaultPrompt(i), 12)) << "request " << i;
  }
}

// Memory plans applied while streams run: the neuron cache shrinks to nothing and grows back
// between steps, the resident bytes follow, the plan version advances, and every stream's greedy
// output is what it is alone.
TEST_F(SchedulerTest, MemoryPlansResizeTheNeuronCacheBetweenStepsWithoutChangingOutputs) {
  kernels::ThreadPool pool(2);
  const std::optional<SchedulerOptions> o =
      FlashOptions("sched-plan-bamboo", SIZE_MAX, nullptr, &pool);
  if (!o) GTEST_SKIP() << "pwri-bamboo-q4_0.gguf is missing";
  const size_t all = model_->weights().bundles->bundle_bytes();
  Scheduler s(*model_, &pool, *o);
  auto wait_for_version = [&](int64_t v) {
    while (s.Stats().memory_plan_version < v) std::this_thread::yield();
  };
  // Idle: applied at once.
  s.ApplyMemoryPlan(CachePlan(1, 0, "test: squeeze"));
  wait_for_version(1);
  NeuronStoreStats st = *s.Stats().neuron_cache;
  EXPECT_EQ(st.capacity_bytes, 0u);
  EXPECT_EQ(st.hot_bytes + st.cache.mapped_bytes, 0u) << "the memory went back to the OS";
  const std::vector<std::string> prompts = {"Once upon a time", "The little dog",
                                            "Lily and Ben went to the park.", "One day, a cat"};
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  for (const std::string& p : prompts) {
    sinks.push_back(std::make_shared<CollectingSink>());
    ASSERT_TRUE(s.Submit(Greedy(p, 24, sinks.back())).ok());
  }
  // Squeeze and release while they run.
  for (int64_t v = 2; v < 12; ++v) {
    const size_t bytes = v % 2 == 0 ? all : all / 8;
    s.ApplyMemoryPlan(CachePlan(v, bytes, "test"));
    wait_for_version(v);
  }
  for (size_t i = 0; i < sinks.size(); ++i) {
    EXPECT_EQ(sinks[i]->Wait().reason, FinishReason::kLength);
    EXPECT_EQ(sinks[i]->tokens(), Alone(prompts[i], 24)) << "request " << i;
  }
  const SchedulerStats done = s.Stats();
  EXPECT_EQ(done.memory_plan_version, 11);
  EXPECT_EQ(done.requests_failed, 0);
  EXPECT_EQ(done.neuron_cache->capacity_bytes, all / 8);
  EXPECT_LE(done.neuron_cache->hot_bytes, all / 8);
}

// A tight plan (the device short of memory): the staging buffer of whole-layer reads goes back
// to the OS at once and later prompts gather their neurons through the cache instead of reading
// layers whole; released, layers are staged again.
TEST_F(SchedulerTest, ATightPlanGivesTheLayerStagingBackAndGathersInstead) {
  kernels::ThreadPool pool(2);
  std::optional<SchedulerOptions> o = FlashOptions("sched-tight-bamboo", SIZE_MAX, nullptr, &pool);
  if (!o) GTEST_SKIP() << "pwri-bamboo-q4_0.gguf is missing";
  o->step_token_budget = 64;
  Scheduler s(*model_, &pool, *o);
  const std::string story =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
      "park with her dog. One day, they found a big red ball under a tree.";
  auto run = [&](const std::string& text) {
    auto sink = std::make_shared<CollectingSink>();
    EXPECT_TRUE(s.Submit(Greedy(text, 4, sink)).ok());
    EXPECT_EQ(sink->Wait().reason, FinishReason::kLength);
    return *s.Stats().neuron_cache;
  };
  NeuronStoreStats st = run(story);
  ASSERT_GT(st.layer_reads, 0) << "a prompt of this length reads its layers whole";
  ASSERT_GT(st.staging_bytes, 0u);
  MemoryPlan tight;
  tight.version = 1;
  tight.tight = true;
  tight.cause = "test: tight";
  tight.decided = std::chrono::steady_clock::now();
  s.ApplyMemoryPlan(tight);
  while (s.Stats().memory_plan_version < 1) std::this_thread::yield();
  EXPECT_EQ(s.Stats().neuron_cache->staging_bytes, 0u) << "the staging buffer went back";
  const int64_t reads = st.layer_reads;
  st = run("The little dog " + story);
  EXPECT_EQ(st.layer_reads, reads) << "gathered, not read whole";
  EXPECT_EQ(st.staging_bytes, 0u);
  MemoryPlan release = tight;
  release.version = 2;
  release.tight = false;
  s.ApplyMemoryPlan(release);
  while (s.Stats().memory_plan_version < 2) std::this_thread::yield();
  st = run("A bird sang. " + story);
  EXPECT_GT(st.layer_reads, reads) << "staged again once memory is back";
  EXPECT_EQ(s.Stats().requests_failed, 0);
}

// The KV pool shrinks to its floor (one full context) while eight streams hold more than that:
// the newest are preempted and resume later, the pool's memory goes back to the OS, it grows
// back, and every stream's greedy output is what it is alone.
TEST_F(SchedulerTest, MemoryPlansResizeTheKvPoolWhileStreamsRun) {
  SchedulerOptions o = Options();  // n_ctx 256, 16 positions a block: a floor of 16 blocks
  o.max_running = 8;
  Scheduler s(*model_, nullptr, o);
  const int64_t full = s.options().kv_blocks;
  ASSERT_EQ(s.min_kv_blocks(), 16);
  ASSERT_GT(full, 64);
  const int64_t full_mapped = s.Stats().kv.mapped_bytes;
  // Each prompt starts differently, so that no two share a prefix block: a prompt admitted after
  // another's blocks were published would otherwise reuse them and hold fewer of its own.
  const std::string story =
      " Once upon a time, there was a little girl named Lily. She loved to play outside in the "
      "park with her dog.";
  const std::vector<std::string> prompts = {
      "She saw" + story,      "The dog ran" + story,    "It rained" + story, "A bird sang" + story,
      "Her mom said" + story, "They went home" + story, "Ben came" + story,  "The sun was" + story};
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  std::vector<GenerationRequest> requests;
  for (const std::string& p : prompts) {
    sinks.push_back(std::make_shared<CollectingSink>());
    requests.push_back(Greedy(p, 48, sinks.back()));
  }
  for (GenerationRequest& r : requests) ASSERT_TRUE(s.Submit(std::move(r)).ok());
  // Once all eight run and decode, they hold about 8 * 3 blocks: more than the floor. (Bounded:
  // the assertions below say what went wrong rather than a hang.)
  for (int i = 0; i < 60000; ++i) {
    const SchedulerStats now = s.Stats();
    if (now.running == 8 && now.generated_tokens >= 8 * 4) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  MemoryPlan squeeze;
  squeeze.version = 1;
  squeeze.bytes.Set(MemoryUserKind::kKvPool, 0);  // clamped to the floor
  squeeze.cause = "test: squeeze";
  squeeze.decided = std::chrono::steady_clock::now();
  s.ApplyMemoryPlan(squeeze);
  while (s.Stats().memory_plan_version < 1) std::this_thread::yield();
  SchedulerStats st = s.Stats();
  EXPECT_EQ(st.kv.total_blocks, 16);
  EXPECT_LE(st.kv.used_blocks, 16);
  EXPECT_LT(st.kv.mapped_bytes, full_mapped) << "the pool's memory went back to the OS";
  EXPECT_GT(st.preemptions, 0);
  MemoryPlan release = squeeze;
  release.version = 2;
  release.bytes.Set(MemoryUserKind::kKvPool, SIZE_MAX / 2);  // clamped to the configured pool
  release.cause = "test: release";
  s.ApplyMemoryPlan(release);
  for (size_t i = 0; i < sinks.size(); ++i) {
    EXPECT_EQ(sinks[i]->Wait().reason, FinishReason::kLength);
    EXPECT_EQ(sinks[i]->tokens(), Alone(prompts[i], 48)) << "request " << i;
  }
  st = s.Stats();
  EXPECT_EQ(st.memory_plan_version, 2);
  EXPECT_EQ(st.kv.total_blocks, full);
  EXPECT_EQ(st.kv.used_blocks, 0);
  EXPECT_EQ(st.requests_failed, 0);
}

// The step's scratch is a memory user: its held bytes are what the forward pass's buffers grew
// to; a plan that gives it less caps the tokens a step takes and gives the buffers back at once,
// and the steps after it stay within that (the prompt goes in smaller chunks, and completes).
TEST_F(SchedulerTest, AScratchBudgetCapsTheStepsAndGivesTheBuffersBack) {
  SchedulerOptions o = Options();
  o.step_token_budget = 128;
  Scheduler s(*model_, nullptr, o);
  auto scratch = [&s] {
    for (const MemoryUserStats& u : s.Stats().memory) {
      if (u.kind == MemoryUserKind::kScratch) return u;
    }
    ADD_FAILURE() << "no scratch user";
    return MemoryUserStats{};
  };
  std::string text;
  for (int i = 0; i < 12; ++i) text += " Once upon a time, there was a little girl named Lily.";
  auto run = [&] {
    auto sink = std::make_shared<CollectingSink>();
    EXPECT_TRUE(s.Submit(Greedy(text, 8, sink)).ok());
    EXPECT_EQ(sink->Wait().reason, FinishReason::kLength);
    // The scratch is measured after the step: wait for the loop to count it.
    for (int i = 0; i < 1000 && s.Stats().running > 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  };
  ASSERT_GT(Greedy(text, 8, nullptr).prompt.size(), 128u);
  run();
  const MemoryUserStats wide = scratch();
  const ModelConfig& c = model_->config();
  EXPECT_GE(wide.held_bytes, uint64_t{128} * 4 * static_cast<uint64_t>(c.n_embd))
      << "a step of 128 tokens grew at least their residual rows";
  EXPECT_EQ(wide.capacity_bytes, EstimateScratchBytes(c, 128, o.n_ctx, o.max_running));

  MemoryPlan plan;
  plan.version = 1;
  plan.bytes.Set(MemoryUserKind::kScratch, EstimateScratchBytes(c, 40, o.n_ctx, o.max_running));
  plan.decided = std::chrono::steady_clock::now();
  s.ApplyMemoryPlan(plan);
  while (s.Stats().memory_plan_version < 1) std::this_thread::yield();
  const MemoryUserStats narrow = scratch();
  EXPECT_EQ(narrow.capacity_bytes, EstimateScratchBytes(c, 40, o.n_ctx, o.max_running));
  EXPECT_LT(narrow.held_bytes, wide.held_bytes / 2) << "the buffers went back at once";
  run();
  const MemoryUserStats after = scratch();
  EXPECT_LE(after.held_bytes, after.capacity_bytes);
  EXPECT_LT(after.held_bytes, wide.held_bytes);
}

TEST_F(SchedulerTest, SharedPrefixBlocksAreReused) {
  Scheduler s(*model_, nullptr, Options());
  const std::string system =
      "Once upon a time, there was a little girl named Lily. She loved to play outside.";
  auto first = std::make_shared<CollectingSink>();
  ASSERT_TRUE(s.Submit(Greedy(system + " One day", 10, first)).ok());
  first->Wait();
  auto second = std::make_shared<CollectingSink>();
  ASSERT_TRUE(s.Submit(Greedy(system + " One day", 10, second)).ok());
  FinishInfo info = second->Wait();
  EXPECT_GT(info.cached_prompt_tokens, 0);
  EXPECT_EQ(info.cached_prompt_tokens % 16, 0);
  EXPECT_EQ(second->tokens(), first->tokens());
  EXPECT_GT(s.Stats().kv.prefix_hits, 0);
  EXPECT_EQ(second->tokens(), Alone(system + " One day", 10));
}

TEST_F(SchedulerTest, PreemptionWhenKvRunsOutKeepsResultsExact) {
  SchedulerOptions o = Options();
  o.kv_blocks = 6;  // 96 positions for 4 requests of up to ~45 positions each
  o.kv_block_size = 16;
  Scheduler s(*model_, nullptr, o);
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  const std::vector<std::string> prompts = {"Once upon a time", "The little dog", "Tom said",
                                            "A big tree"};
  // Tokenized first and submitted back to back, so that they run together even on a busy
  // machine (a request submitted after the first one finished would need no preemption).
  std::vector<GenerationRequest> requests;
  for (const auto& p : prompts) {
    sinks.push_back(std::make_shared<CollectingSink>());
    requests.push_back(Greedy(p, 40, sinks.back()));
  }
  for (GenerationRequest& r : requests) ASSERT_TRUE(s.Submit(std::move(r)).ok());
  for (size_t i = 0; i < prompts.size(); ++i) {
    FinishInfo info = sinks[i]->Wait();
    EXPECT_EQ(info.reason, FinishReason::kLength);
    EXPECT_EQ(sinks[i]->tokens(), Alone(prompts[i], 40)) << prompts[i];
  }
  EXPECT_GT(s.Stats().preemptions, 0);
  EXPECT_EQ(s.Stats().kv.used_blocks, 0);
}

// n choices of one prompt: computed once, forked with the partial last block shared
// copy-on-write. Any write through a shared block would change the other members' tokens.
TEST_F(SchedulerTest, GroupComputesThePromptOnceAndForks) {
  const std::string prompt = "Lily and Ben went to the park. They saw a big dog";
  Scheduler s(*model_, nullptr, Options());
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  std::vector<GenerationRequest> group;
  for (int i = 0; i < 3; ++i) {
    sinks.push_back(std::make_shared<CollectingSink>());
    group.push_back(Greedy(prompt, 30 + 5 * i, sinks.back()));
  }
  const int64_t n_prompt = static_cast<int64_t>(group[0].prompt.size());
  ASSERT_NE(n_prompt % 16, 0) << "the test needs a partial last block";
  ASSERT_TRUE(s.SubmitGroup(std::move(group)).ok());
  for (int i = 0; i < 3; ++i) {
    FinishInfo info = sinks[i]->Wait();
    EXPECT_EQ(info.reason, FinishReason::kLength);
    EXPECT_EQ(sinks[i]->tokens(), Alone(prompt, 30 + 5 * i)) << "member " << i;
    if (i > 0) {
      EXPECT_EQ(info.cached_prompt_tokens, n_prompt);
    }
  }
  SchedulerStats st = s.Stats();
  EXPECT_EQ(st.prompt_tokens, n_prompt) << "the prompt is computed once for the group";
  EXPECT_EQ(st.kv.used_blocks, 0);
  EXPECT_EQ(st.requests_finished, 3);
}

TEST_F(SchedulerTest, SampledGroupMembersEqualTheSameRequestsAlone) {
  // 19 tokens: positions 19..31 of the second block are written by every member.
  const std::string prompt = "Lily and Ben went to the park. They saw a big dog";
  auto request = [&](uint64_t seed, std::shared_ptr<RequestSink> sink) {
    GenerationRequest r = Greedy(prompt, 40, std::move(sink));
    r.sampling.temperature = 1.0f;
    r.sampling.seed = seed;
    return r;
  };
  Scheduler s(*model_, nullptr, Options());
  std::vector<std::shared_ptr<CollectingSink>> members;
  std::vector<GenerationRequest> group;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    members.push_back(std::make_shared<CollectingSink>());
    group.push_back(request(seed, members.back()));
  }
  ASSERT_TRUE(s.SubmitGroup(std::move(group)).ok());
  for (auto& m : members) m->Wait();
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    auto alone = std::make_shared<CollectingSink>();
    ASSERT_TRUE(s.Submit(request(seed, alone)).ok());
    alone->Wait();
    EXPECT_EQ(members[seed - 1]->tokens(), alone->tokens()) << "seed " << seed;
  }
  EXPECT_NE(members[0]->tokens(), members[1]->tokens()) << "distinct seeds, distinct samples";
  EXPECT_EQ(s.Stats().kv.used_blocks, 0);
}

TEST_F(SchedulerTest, GroupUnderKvPressureIsPreemptedAndStaysExact) {
  SchedulerOptions o = Options();
  o.kv_blocks = 7;
  Scheduler s(*model_, nullptr, o);
  const std::string prompt = "Tom had a big red ball";
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  std::vector<GenerationRequest> group;
  for (int i = 0; i < 3; ++i) {
    sinks.push_back(std::make_shared<CollectingSink>());
    group.push_back(Greedy(prompt, 45, sinks.back()));
  }
  ASSERT_TRUE(s.SubmitGroup(std::move(group)).ok());
  const std::vector<int32_t> want = Alone(prompt, 45);
  for (auto& sink : sinks) {
    EXPECT_EQ(sink->Wait().reason, FinishReason::kLength);
    EXPECT_EQ(sink->tokens(), want);
  }
  EXPECT_GT(s.Stats().preemptions, 0);
  EXPECT_EQ(s.Stats().kv.used_blocks, 0);
}

TEST_F(SchedulerTest, GroupErrorsAndCancellation) {
  SchedulerOptions o = Options();
  o.max_running = 4;
  Scheduler s(*model_, nullptr, o);
  auto unused = std::make_shared<CollectingSink>();
  std::vector<GenerationRequest> mixed;
  mixed.push_back(Greedy("Once upon a time", 4, unused));
  mixed.push_back(Greedy("The little dog", 4, unused));
  Status st = s.SubmitGroup(std::move(mixed));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("share one prompt"), std::string::npos) << st.message();
  std::vector<GenerationRequest> big;
  for (int i = 0; i < 5; ++i) big.push_back(Greedy("Once", 4, unused));
  st = s.SubmitGroup(std::move(big));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("max_running (4)"), std::string::npos) << st.message();
  EXPECT_EQ(s.SubmitGroup({}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(unused->finish_calls(), 0);

  std::vector<std::shared_ptr<CollectingSink>> sinks;
  std::vector<GenerationRequest> group;
  for (int i = 0; i < 3; ++i) {
    sinks.push_back(std::make_shared<CollectingSink>(/*cancel_after=*/2));
    group.push_back(Greedy("Once upon a time", 200, sinks.back()));
  }
  ASSERT_TRUE(s.SubmitGroup(std::move(group)).ok());
  for (auto& sink : sinks) {
    EXPECT_EQ(sink->Wait().reason, FinishReason::kCancelled);
    EXPECT_EQ(sink->finish_calls(), 1);
  }
  EXPECT_EQ(s.Stats().requests_cancelled, 3);
  EXPECT_EQ(s.Stats().kv.used_blocks, 0);
}

TEST_F(SchedulerTest, CancelledRequestFreesItsBlocks) {
  Scheduler s(*model_, nullptr, Options());
  auto sink = std::make_shared<CollectingSink>(/*cancel_after=*/3);
  ASSERT_TRUE(s.Submit(Greedy("Once upon a time", 200, sink)).ok());
  FinishInfo info = sink->Wait();
  EXPECT_EQ(info.reason, FinishReason::kCancelled);
  EXPECT_GE(sink->tokens().size(), 3u);
  EXPECT_LT(sink->tokens().size(), 10u);
  EXPECT_EQ(s.Stats().requests_cancelled, 1);
  EXPECT_EQ(s.Stats().kv.used_blocks, 0);
}

TEST_F(SchedulerTest, LogprobsAreNormalised) {
  Scheduler s(*model_, nullptr, Options());
  auto sink = std::make_shared<CollectingSink>();
  auto req = Greedy("Once upon a time", 5, sink);
  req.logprobs = true;
  req.top_logprobs = 3;
  ASSERT_TRUE(s.Submit(std::move(req)).ok());
  sink->Wait();
  for (const TokenEvent& ev : sink->events()) {
    ASSERT_EQ(ev.top_logprobs.size(), 3u);
    EXPECT_EQ(ev.top_logprobs[0].first, ev.token);  // greedy picks the best
    EXPECT_FLOAT_EQ(ev.top_logprobs[0].second, ev.logprob);
    EXPECT_LE(ev.logprob, 0.0f);
    EXPECT_GE(ev.top_logprobs[0].second, ev.top_logprobs[1].second);
  }
}

TEST_F(SchedulerTest, SubmitRejectsWhatCanNeverRun) {
  SchedulerOptions o = Options();
  o.n_ctx = 8;
  Scheduler s(*model_, nullptr, o);
  auto sink = std::make_shared<CollectingSink>();
  GenerationRequest r = Greedy("one two three four five six seven eight", 4, sink);
  Status st = s.Submit(r);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("context holds 8"), std::string::npos) << st.message();
  r.prompt = {};
  EXPECT_EQ(s.Submit(r).code(), StatusCode::kInvalidArgument);
  r.prompt = {1, 9999};
  EXPECT_NE(s.Submit(r).message().find("9999"), std::string::npos);
  r.prompt = {1};
  r.sampling.top_p = 3;
  EXPECT_NE(s.Submit(r).message().find("top_p"), std::string::npos);
  r.sampling.top_p = 1;
  r.max_tokens = 0;
  EXPECT_EQ(s.Submit(r).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(sink->finish_calls(), 0);
}

TEST_F(SchedulerTest, FullQueueIsResourceExhaustedAndShutdownCancels) {
  SchedulerOptions o = Options();
  o.max_queue = 2;
  o.max_running = 1;
  auto s = std::make_unique<Scheduler>(*model_, nullptr, o);
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  int refused = 0;
  for (int i = 0; i < 10; ++i) {
    sinks.push_back(std::make_shared<CollectingSink>());
    Status st = s->Submit(Greedy("Once upon a time", 200, sinks.back()));
    if (!st.ok()) {
      EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
      ++refused;
      sinks.pop_back();
    }
  }
  EXPECT_GT(refused, 0);
  s->Shutdown(std::chrono::milliseconds(0));
  for (auto& sink : sinks) {
    FinishInfo info = sink->Wait();
    EXPECT_TRUE(info.reason == FinishReason::kCancelled || info.reason == FinishReason::kLength);
    EXPECT_EQ(sink->finish_calls(), 1);
  }
  EXPECT_EQ(s->Submit(Greedy("x", 1, std::make_shared<CollectingSink>())).code(),
            StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace sparrow
