// Collaborative inference without the network: a scheduler whose middle and last layers are
// computed by LayerRangeRunners (what a shard worker runs) generates exactly what one device
// generates, for every family, through prefix reuse, forked choices and a KV pool that shrinks
// under a memory plan; a range that fails fails its step's requests and the server goes on.
#include "engine/shard/layer_range_runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/kernels/thread_pool.h"
#include "engine/sched/scheduler.h"
#include "engine/sparse/ffn_factory.h"
#include "tests/util/collecting_sink.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

// A layer range computed in this process by the worker's engine part; the network transport
// (server/shard) carries exactly these calls.
class InProcessLayers final : public RemoteLayers {
 public:
  InProcessLayers(const Model& model, int64_t first, int64_t end,
                  std::optional<TensorSlice> slice = std::nullopt)
      : model_(model) {
    a_.first_layer = first;
    a_.end_layer = end;
    a_.slice = slice;
  }
  int64_t first_layer() const override { return a_.first_layer; }
  int64_t end_layer() const override { return a_.end_layer; }
  std::string name() const override { return "in-process " + std::to_string(a_.first_layer); }
  // Computes at Start (in order, as a worker does), answers at Finish.
  Status Start(std::span<const StageSegment> segments, int64_t n_embd,
               std::span<float> hidden) override {
    return StartPart(LayerPart::kLayers, 0, segments, n_embd, hidden);
  }
  const TensorSlice* slice() const override { return a_.slice ? &*a_.slice : nullptr; }
  Status StartPart(LayerPart part, int64_t layer, std::span<const StageSegment> segments, int64_t,
                   std::span<float> hidden) override {
    std::lock_guard<std::mutex> lock(mu_);
    done_.push_back(Compute(part, layer, segments, hidden));
    max_in_flight_ = std::max(max_in_flight_, static_cast<int64_t>(done_.size()));
    return Status::Ok();
  }
  Status Finish() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_.empty()) return Internal("nothing started");
    Status st = done_.front();
    done_.pop_front();
    return st;
  }
  void OnBlockCopy(int32_t src, int32_t dst) override {
    std::lock_guard<std::mutex> lock(mu_);
    ops_.push_back({KvBlockOp::Kind::kCopy, src, dst, 0});
  }
  void OnPoolResize(int64_t n) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!runner_) a_.kv_blocks = n;  // the first one sizes the runner
    ops_.push_back({KvBlockOp::Kind::kResize, 0, 0, n});
  }
  void set_block_size(int64_t bs) { a_.kv_block_size = bs; }
  void FailNext() {
    std::lock_guard<std::mutex> lock(mu_);
    fail_next_ = true;
  }
  int64_t runs() {
    std::lock_guard<std::mutex> lock(mu_);
    return runs_;
  }
  // The most batches started and not yet finished at once: the pipeline's micro-batches.
  int64_t max_in_flight() {
    std::lock_guard<std::mutex> lock(mu_);
    return max_in_flight_;
  }

 private:
  Status Compute(LayerPart part, int64_t layer, std::span<const StageSegment> segments,
                 std::span<float> hidden) {
    if (fail_next_) {
      fail_next_ = false;
      return Unavailable(name() + " did not answer");
    }
    if (!runner_) {
      auto r = LayerRangeRunner::Create(model_, nullptr, a_);
      if (!r.ok()) return r.status();
      runner_ = std::move(r).value();
    }
    SPARROW_RETURN_IF_ERROR(runner_->Apply(ops_));
    ops_.clear();
    ++runs_;
    if (part == LayerPart::kLayers) return runner_->Run(segments, hidden);
    return runner_->RunPart(part, layer, segments, hidden);
  }

  const Model& model_;
  std::mutex mu_;
  ShardAssignment a_;
  std::unique_ptr<LayerRangeRunner> runner_;
  std::vector<KvBlockOp> ops_;
  std::deque<Status> done_;
  bool fail_next_ = false;
  int64_t runs_ = 0;
  int64_t max_in_flight_ = 0;
};

using testing::CollectingSink;

// Calls `on_token` with the count of tokens so far, from the scheduler's thread.
class PlacingSink final : public CollectingSink {
 public:
  explicit PlacingSink(std::function<void(size_t)> on_token) : on_token_(std::move(on_token)) {}
  bool OnToken(const TokenEvent& ev) override {
    CollectingSink::OnToken(ev);
    on_token_(count());
    return true;
  }

 private:
  std::function<void(size_t)> on_token_;
};

struct Outcome {
  std::vector<std::vector<int32_t>> tokens;
  int64_t prefix_hits = 0;
};

class LayerRangeRunnerTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string& name = GetParam();
    // Two quantized files too: a slice's columns are cut on their blocks.
    const bool quantized = !name.ends_with("f32") && name != "stories260K";
    const std::string path = name == "stories260K" ? testing::ModelPath("stories260K.gguf")
                             : quantized
                                 ? testing::SharedDir() + "/models/synthetic/" + name + ".gguf"
                                 : testing::SharedDir() + "/arch/models/" + name + ".gguf";
    auto m = Model::Load(path);
    if (!m.ok() && m.status().code() == StatusCode::kNotFound) GTEST_SKIP() << path << " absent";
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value();
  }

  SchedulerOptions Options() {
    SchedulerOptions o;
    o.n_ctx = 64;
    o.kv_block_size = 4;
    o.kv_blocks = 64;
    o.step_token_budget = 7;  // prompts in chunks, alongside other sequences' decoding
    o.is_eog = [](int32_t) { return false; };
    return o;
  }

  std::vector<int32_t> Prompt(int salt, int len) {
    std::vector<int32_t> p;
    for (int i = 0; i < len; ++i)
      p.push_back(
          static_cast<int32_t>((i * 37 + 5 + (i > 9 ? salt : 0)) % model_->config().n_vocab));
    return p;
  }

  // Three requests sharing a 10-token prefix (the last two reuse its blocks), one of them a pair
  // of choices (a fork with a shared partial block), and a pool shrink in the middle.
  Outcome Generate(SchedulerOptions o, bool shrink) {
    kernels::ThreadPool pool(2);
    Scheduler s(*model_, &pool, std::move(o));
    std::vector<std::shared_ptr<CollectingSink>> sinks;
    auto submit = [&](int salt, int len) {
      GenerationRequest r;
      r.prompt = Prompt(salt, len);
      r.max_tokens = 12;
      r.sampling.temperature = 0;
      r.sink = sinks.emplace_back(std::make_shared<CollectingSink>());
      EXPECT_TRUE(s.Submit(std::move(r)).ok());
    };
    submit(1, 13);
    sinks[0]->Wait();
    std::vector<GenerationRequest> group(2);
    for (auto& r : group) {
      r.prompt = Prompt(2, 11);
      r.max_tokens = 12;
      r.sampling.temperature = 0.7f;  // the pair diverges: each writes its own blocks
      r.sampling.seed = 7 + sinks.size();
      r.sink = sinks.emplace_back(std::make_shared<CollectingSink>());
    }
    EXPECT_TRUE(s.SubmitGroup(std::move(group)).ok());
    submit(3, 17);
    if (shrink) {
      MemoryPlan plan;
      plan.version = 1;
      plan.bytes.Set(MemoryUserKind::kKvPool, static_cast<uint64_t>(s.kv_block_bytes() * 24));
      plan.decided = std::chrono::steady_clock::now();
      s.ApplyMemoryPlan(plan);
    }
    Outcome out;
    for (auto& sink : sinks) {
      FinishInfo info = sink->WaitInfo();
      EXPECT_EQ(info.reason, FinishReason::kLength) << info.status.ToString();
      out.tokens.push_back(sink->Wait());
    }
    out.prefix_hits = s.Stats().kv.prefix_hits;
    return out;
  }

  std::unique_ptr<Model> model_;
};

TEST_P(LayerRangeRunnerTest, TwoRemoteRangesGenerateWhatOneDeviceDoes) {
  const int64_t n_layer = model_->config().n_layer;
  ASSERT_GE(n_layer, 2);
  for (bool shrink : {false, true}) {
    const Outcome alone = Generate(Options(), shrink);
    // 1: the batch goes whole from device to device; 0: one micro-batch per device (3); 5: more
    // micro-batches than devices, prompt chunks cut in parts.
    for (int64_t micro : {1, 0, 5}) {
      SchedulerOptions o = Options();
      o.pipeline_micro_batches = micro;
      // With two layers the coordinator keeps only the embedding and the output.
      const int64_t a = n_layer / 3, b = std::max(a + 1, 2 * n_layer / 3);
      auto middle = std::make_shared<InProcessLayers>(*model_, a, b);
      auto last = std::make_shared<InProcessLayers>(*model_, b, n_layer);
      middle->set_block_size(o.kv_block_size);
      last->set_block_size(o.kv_block_size);
      o.remote_layers = {last, middle};  // any order
      const Outcome split = Generate(std::move(o), shrink);
      EXPECT_EQ(split.tokens, alone.tokens) << "shrink " << shrink << " micro " << micro;
      EXPECT_GT(split.prefix_hits, 0);
      EXPECT_GT(middle->runs(), 0);
      EXPECT_EQ(middle->runs(), last->runs());
      if (micro == 1) {
        EXPECT_EQ(middle->max_in_flight(), 1);
      } else {
        // The pipeline is full: the middle device had the next micro-batch before it answered.
        EXPECT_GE(middle->max_in_flight(), 2) << "micro " << micro;
      }
    }
  }
}

TEST_P(LayerRangeRunnerTest, APipelineAroundTheCoordinatorsLayersGeneratesWhatOneDeviceDoes) {
  const int64_t n_layer = model_->config().n_layer;
  if (n_layer < 3) GTEST_SKIP() << "needs a layer on each of three devices";
  const Outcome alone = Generate(Options(), false);
  SchedulerOptions o = Options();
  // The first and the last layers remote, the coordinator's between them.
  auto first = std::make_shared<InProcessLayers>(*model_, 0, 1);
  auto last = std::make_shared<InProcessLayers>(*model_, n_layer - 1, n_layer);
  first->set_block_size(o.kv_block_size);
  last->set_block_size(o.kv_block_size);
  o.remote_layers = {first, last};
  o.pipeline_micro_batches = 4;
  const Outcome split = Generate(std::move(o), false);
  EXPECT_EQ(split.tokens, alone.tokens);
  EXPECT_GE(first->max_in_flight(), 2);
  EXPECT_EQ(first->runs(), last->runs());
}

// A device leaves or comes back and the layers are placed again while requests run: they
// resume (recomputing what they had) and generate what one device does.
TEST_P(LayerRangeRunnerTest, LayersPlacedAgainMidStreamGenerateWhatOneDeviceDoes) {
  const int64_t n_layer = model_->config().n_layer;
  auto run = [&](bool split) {
    kernels::ThreadPool pool(1);
    SchedulerOptions o = Options();
    std::vector<std::shared_ptr<InProcessLayers>> used;
    auto range = [&](int64_t first, int64_t end) {
      auto r = std::make_shared<InProcessLayers>(*model_, first, end);
      r->set_block_size(o.kv_block_size);
      used.push_back(r);
      return r;
    };
    if (split) o.remote_layers = {range(n_layer / 2, n_layer)};
    Scheduler s(*model_, &pool, o);
    std::vector<std::shared_ptr<CollectingSink>> sinks;
    // The placement changes as the first request's tokens 5, 12 and 20 come out (the sink runs
    // on the scheduler's thread, so this is mid-stream, with the others running too).
    std::vector<std::vector<std::shared_ptr<RemoteLayers>>> placements;
    if (split) {
      placements = {{range(0, 1), range(n_layer - 1, n_layer)}, {}, {range(1, n_layer)}};
    }
    auto submit = [&](int salt, std::function<void(size_t)> on_token = nullptr) {
      GenerationRequest r;
      r.prompt = Prompt(salt, 12);
      r.max_tokens = 30;
      r.sampling.temperature = 0;
      std::shared_ptr<CollectingSink> sink;
      if (on_token) {
        sink = std::make_shared<PlacingSink>(std::move(on_token));
      } else {
        sink = std::make_shared<CollectingSink>();
      }
      r.sink = sinks.emplace_back(sink);
      EXPECT_TRUE(s.Submit(std::move(r)).ok());
    };
    // The others first, so that they are usually running when the placement changes.
    submit(2);
    submit(3);
    submit(1, [&](size_t n) {
      const size_t at[] = {5, 12, 20};
      for (size_t i = 0; i < placements.size(); ++i)
        if (n == at[i]) s.ReplaceRemoteLayers(placements[i]);
    });
    std::vector<std::vector<int32_t>> out;
    for (auto& sink : sinks) {
      EXPECT_EQ(sink->WaitInfo().reason, FinishReason::kLength);
      out.push_back(sink->Wait());
    }
    if (split) {
      // Each placement computed tokens, and the running requests started over at each change
      // (at least the one whose tokens changed it: how far the others had got when it did
      // depends on the threads' timing).
      for (const auto& r : used) EXPECT_GT(r->runs(), 0);
      EXPECT_GE(s.Stats().preemptions, 3);
    }
    return out;
  };
  EXPECT_EQ(run(true), run(false));
}

// Galaxy's tensor split: every layer cut in three (this device's slice and two workers'), and
// then a split range beside a pipeline stage; the partial sums added on the coordinator give
// what one device gives.
TEST_P(LayerRangeRunnerTest, ATensorSplitGeneratesWhatOneDeviceDoes) {
  const int64_t n_layer = model_->config().n_layer;
  const std::vector<double> shares{1, 1, 1};
  auto slices = CutSlices(*model_, 0, n_layer, shares);
  if (model_->config().n_expert > 0) {
    ASSERT_FALSE(slices.ok());
    EXPECT_EQ(slices.status().code(), StatusCode::kUnsupported) << slices.status().ToString();
    EXPECT_NE(slices.status().message().find("experts"), std::string::npos);
    return;
  }
  ASSERT_TRUE(slices.ok()) << slices.status().ToString();
  // The small models have two KV heads: one device of three gets none.
  int64_t heads = 0;
  for (const TensorSlice& s : *slices) {
    heads += s.kv_heads();
    EXPECT_LT(s.ff_begin, s.ff_end) << s.ToString();
  }
  EXPECT_EQ(heads, model_->config().n_head_kv);
  // Steps of 7 tokens, and of 32 (a part's tokens then go to the workers in chunks).
  for (int64_t budget : {7, 32})
    for (bool shrink : {false, true}) {
      SchedulerOptions base = Options();
      base.step_token_budget = budget;
      const Outcome alone = Generate(base, shrink);
      SchedulerOptions o = base;
      std::vector<std::shared_ptr<InProcessLayers>> workers;
      for (size_t i : {2u, 1u}) {  // this device takes the first slice
        auto w = std::make_shared<InProcessLayers>(*model_, 0, n_layer, (*slices)[i]);
        w->set_block_size(o.kv_block_size);
        workers.push_back(w);
        o.remote_layers.push_back(w);
      }
      const Outcome split = Generate(std::move(o), shrink);
      EXPECT_EQ(split.tokens, alone.tokens) << "shrink " << shrink << " budget " << budget;
      EXPECT_GT(split.prefix_hits, 0);
      // Two parts (attention, FFN) of each layer; a long step's in chunks sent ahead.
      EXPECT_GT(workers[0]->runs(), 2 * n_layer);
      EXPECT_EQ(workers[0]->runs(), workers[1]->runs());
      if (budget == 7) {
        EXPECT_EQ(workers[0]->max_in_flight(), 1);
      } else {
        EXPECT_GE(workers[0]->max_in_flight(), 3);
      }
    }
  if (n_layer < 2) return;
  // The first half split with one worker, the second half a pipeline stage on another.
  const int64_t half = n_layer / 2;
  auto two = CutSlices(*model_, 0, half, std::vector<double>{1, 1});
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  SchedulerOptions o = Options();
  auto sliced = std::make_shared<InProcessLayers>(*model_, 0, half, (*two)[1]);
  auto stage = std::make_shared<InProcessLayers>(*model_, half, n_layer);
  sliced->set_block_size(o.kv_block_size);
  stage->set_block_size(o.kv_block_size);
  o.remote_layers = {stage, sliced};
  o.pipeline_micro_batches = 0;
  EXPECT_EQ(Generate(std::move(o), false).tokens, Generate(Options(), false).tokens);
  EXPECT_GT(sliced->runs(), 0);
  EXPECT_GT(stage->runs(), 0);
}

TEST_P(LayerRangeRunnerTest, AFailedRangeFailsItsStepAndTheNextRequestRuns) {
  const int64_t n_layer = model_->config().n_layer;
  // A pipeline stage, then a slice of a tensor split.
  for (bool sliced : {false, true}) {
    SchedulerOptions o = Options();
    std::shared_ptr<InProcessLayers> last;
    if (sliced) {
      auto two = CutSlices(*model_, n_layer / 2, n_layer, std::vector<double>{1, 1});
      if (!two.ok()) continue;  // experts
      last = std::make_shared<InProcessLayers>(*model_, n_layer / 2, n_layer, (*two)[1]);
    } else {
      last = std::make_shared<InProcessLayers>(*model_, n_layer / 2, n_layer);
    }
    last->set_block_size(o.kv_block_size);
    o.remote_layers = {last};
    kernels::ThreadPool pool(1);
    Scheduler s(*model_, &pool, std::move(o));
    last->FailNext();
    auto first = std::make_shared<CollectingSink>();
    GenerationRequest r;
    r.prompt = Prompt(1, 5);
    r.max_tokens = 4;
    r.sink = first;
    ASSERT_TRUE(s.Submit(r).ok());
    FinishInfo info = first->WaitInfo();
    EXPECT_EQ(info.reason, FinishReason::kError) << "sliced " << sliced;
    EXPECT_NE(info.status.message().find("did not answer"), std::string::npos)
        << info.status.ToString();
    EXPECT_TRUE(first->Wait().empty());
    auto second = std::make_shared<CollectingSink>();
    r.sink = second;
    ASSERT_TRUE(s.Submit(r).ok());
    EXPECT_EQ(second->WaitInfo().reason, FinishReason::kLength) << "sliced " << sliced;
    EXPECT_EQ(second->Wait().size(), 4u);
    EXPECT_EQ(s.Stats().kv.used_blocks, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, LayerRangeRunnerTest,
                         ::testing::Values("stories260K", "synth-llama3rope-f32", "synth-qwen3-f32",
                                           "synth-qwen3moe-f32", "synth-gemma3-f32",
                                           "synth-llama-q4_k_m", "synth-qwen2-q4_0"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

// A tensor split's slices must cut the layers once, with what they leave to this device one
// run, on the weights' blocks; the messages name the slices at fault.
TEST(LayerRangeRunnerChecksTest, RefusesSlicesThatDoNotCutTheLayers) {
  auto m = Model::Load(testing::SharedDir() + "/models/synthetic/synth-qwen2-q4_0.gguf");
  if (!m.ok() && m.status().code() == StatusCode::kNotFound) GTEST_SKIP() << "no synthetic qwen2";
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const Model& model = **m;
  const ModelConfig& c = model.config();
  ASSERT_EQ(c.n_head_kv, 2);
  ASSERT_EQ(c.n_ff, 768);
  auto grain = TensorSplitGrain(model, 0, c.n_layer);
  ASSERT_TRUE(grain.ok());
  EXPECT_EQ(grain->kv_heads, 1);
  EXPECT_EQ(grain->neurons, 32);  // q4_0 blocks
  auto set = [&](std::vector<TensorSlice> slices, int64_t end) {
    std::vector<std::shared_ptr<RemoteLayers>> r;
    for (const TensorSlice& s : slices)
      r.push_back(std::make_shared<InProcessLayers>(model, 0, end, s));
    ForwardPass fp(model, nullptr, MakeDefaultFeedForward(model, nullptr));
    return fp.SetRemoteLayers(r);
  };
  const int64_t L = c.n_layer;
  EXPECT_TRUE(set({{1, 2, 384, 768}}, L).ok());
  EXPECT_TRUE(
      set({{1, 2, 0, 0}, {0, 0, 256, 768}}, L).ok());  // this device: head 0, neurons 0..255
  Status off_grain = set({{1, 2, 400, 768}}, L);
  EXPECT_NE(off_grain.message().find("400 is not a multiple of 32"), std::string::npos)
      << off_grain.ToString();
  Status shared = set({{1, 2, 0, 384}, {1, 2, 384, 768}}, L);
  EXPECT_NE(shared.message().find("share kv heads 1..1"), std::string::npos) << shared.ToString();
  Status two_runs = set({{0, 2, 256, 512}}, L);
  EXPECT_NE(two_runs.message().find("must be one run"), std::string::npos) << two_runs.ToString();
  Status outside = set({{1, 3, 0, 768}}, L);
  EXPECT_NE(outside.message().find("fall outside"), std::string::npos) << outside.ToString();
  if (L >= 2) {
    std::vector<std::shared_ptr<RemoteLayers>> r{
        std::make_shared<InProcessLayers>(model, 0, L, TensorSlice{1, 2, 384, 768}),
        std::make_shared<InProcessLayers>(model, 0, 1, TensorSlice{0, 1, 0, 384})};
    ForwardPass fp(model, nullptr, MakeDefaultFeedForward(model, nullptr));
    Status ranges = fp.SetRemoteLayers(r);
    EXPECT_NE(ranges.message().find("share one range of layers"), std::string::npos)
        << ranges.ToString();
    // A pipeline stage inside the split range.
    r = {std::make_shared<InProcessLayers>(model, 0, L, TensorSlice{1, 2, 384, 768}),
         std::make_shared<InProcessLayers>(model, L - 1, L)};
    EXPECT_FALSE(fp.SetRemoteLayers(r).ok());
  }
  auto cut = CutSlices(model, 0, L, std::vector<double>{3, 1});
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ((*cut)[0], (TensorSlice{0, 2, 0, 576}));  // 3/4 of 24 blocks of 32 neurons
  EXPECT_EQ((*cut)[1], (TensorSlice{2, 2, 576, 768}));
  // A worker refuses a part outside its layers, and whole layers when it holds a slice.
  auto runner =
      LayerRangeRunner::Create(model, nullptr, {0, 1, 4, 8, TensorSlice{1, 2, 384, 768}, {}});
  ASSERT_TRUE(runner.ok()) << runner.status().ToString();
  const std::vector<int32_t> tokens{1}, blocks{0};
  const std::vector<StageSegment> seg{{tokens, 0, blocks}};
  std::vector<float> hidden(c.n_embd, 0.1f);
  EXPECT_TRUE((*runner)->RunPart(LayerPart::kFfn, 0, seg, hidden).ok());
  EXPECT_FALSE((*runner)->RunPart(LayerPart::kFfn, 1, seg, hidden).ok());
  EXPECT_FALSE((*runner)->RunPart(LayerPart::kLayers, 0, seg, hidden).ok());
  EXPECT_FALSE((*runner)->Run(seg, hidden).ok());
  auto off = LayerRangeRunner::Create(model, nullptr, {0, 1, 4, 8, TensorSlice{0, 1, 10, 768}, {}});
  EXPECT_FALSE(off.ok());
}

TEST(LayerRangeRunnerChecksTest, RefusesWhatDoesNotFit) {
  auto m = Model::Load(testing::ModelPath("stories260K.gguf"));
  ASSERT_TRUE(m.ok());
  const Model& model = **m;
  const int64_t n_layer = model.config().n_layer;
  EXPECT_FALSE(
      LayerRangeRunner::Create(model, nullptr, {0, n_layer + 1, 16, 4, std::nullopt, {}}).ok());
  EXPECT_FALSE(LayerRangeRunner::Create(model, nullptr, {2, 2, 16, 4, std::nullopt, {}}).ok());
  EXPECT_FALSE(LayerRangeRunner::Create(model, nullptr, {0, 1, 0, 4, std::nullopt, {}}).ok());
  EXPECT_FALSE(LayerRangeRunner::Create(model, nullptr, {0, 1, 16, 0, std::nullopt, {}}).ok());
  auto r = LayerRangeRunner::Create(model, nullptr, {1, n_layer, 4, 8, std::nullopt, {}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const int64_t d = model.config().n_embd;
  std::vector<int32_t> tokens = {1, 2, 3};
  std::vector<int32_t> table = {0};
  std::vector<float> hidden(3 * d, 0.1f);
  StageSegment seg{tokens, 0, table};
  EXPECT_TRUE((*r)->Run({&seg, 1}, hidden).ok());
  seg.start_pos = 2;  // positions 2..4 need two blocks
  Status st = (*r)->Run({&seg, 1}, hidden);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("not covered"), std::string::npos) << st.message();
  seg.start_pos = 0;
  table = {8};
  seg.blocks = table;
  st = (*r)->Run({&seg, 1}, hidden);
  EXPECT_NE(st.message().find("block 8 outside the pool of 8"), std::string::npos) << st.message();
  table = {0};
  seg.blocks = table;
  std::vector<float> short_hidden(2 * d);
  EXPECT_EQ((*r)->Run({&seg, 1}, short_hidden).code(), StatusCode::kInvalidArgument);
  std::vector<int32_t> bad_token = {1 << 30};
  StageSegment bad{bad_token, 0, table};
  std::vector<float> one(d);
  st = (*r)->Run({&bad, 1}, one);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("token 1073741824 outside the vocabulary"), std::string::npos)
      << st.message();
  const KvBlockOp bad_copy{KvBlockOp::Kind::kCopy, 0, 9, 0};
  EXPECT_EQ((*r)->Apply({&bad_copy, 1}).code(), StatusCode::kInvalidArgument);
}

// Numbers from the wire whose sums or sizes once overflowed or allocated on request.
TEST(LayerRangeRunnerChecksTest, WireNumbersThatUsedToOverflowAreRefused) {
  auto m = Model::Load(testing::ModelPath("stories260K.gguf"));
  ASSERT_TRUE(m.ok());
  const Model& model = **m;
  const int64_t n_layer = model.config().n_layer;
  // kv_blocks: a table of 8 bytes per id was allocated for whatever was asked (2^31 - 1: 16 GiB).
  auto big = LayerRangeRunner::Create(model, nullptr, {1, n_layer, 4, kMaxShardBlocks + 1, {}, {}});
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("kv_blocks 4194305 is outside 1..4194304"),
            std::string::npos)
      << big.status().message();
  EXPECT_TRUE(
      LayerRangeRunner::Create(model, nullptr, {1, n_layer, 4, kMaxShardBlocks, {}, {}}).ok());
  auto r = LayerRangeRunner::Create(model, nullptr, {1, n_layer, 4, 8, std::nullopt, {}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // A resize as large.
  const KvBlockOp grow{KvBlockOp::Kind::kResize, 0, 0, kMaxShardBlocks + 1};
  Status st = (*r)->Apply({&grow, 1});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("resize to 4194305"), std::string::npos) << st.message();
}

// start_pos near INT64_MAX: start_pos + tokens wrapped negative, passed the bound and indexed
// far outside the block table.
TEST(LayerRangeRunnerChecksTest, AStartPosNearInt64MaxIsRefusedNotWrapped) {
  auto m = Model::Load(testing::ModelPath("stories260K.gguf"));
  ASSERT_TRUE(m.ok());
  const Model& model = **m;
  const int64_t n_layer = model.config().n_layer, d = model.config().n_embd;
  auto r = LayerRangeRunner::Create(model, nullptr, {1, n_layer, 4, 8, std::nullopt, {}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Status st;
  std::vector<int32_t> tokens = {1, 2, 3};
  std::vector<int32_t> table = {0};
  std::vector<float> hidden(3 * d, 0.1f);
  for (int64_t pos : {std::numeric_limits<int64_t>::max() - 1, std::numeric_limits<int64_t>::max(),
                      std::numeric_limits<int64_t>::min(), int64_t{-1}, int64_t{2}}) {
    StageSegment seg{tokens, pos, table};
    st = (*r)->Run({&seg, 1}, hidden);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << pos;
    EXPECT_NE(st.message().find("not covered by its 1 blocks of 4"), std::string::npos)
        << st.message();
  }
  // The last positions a table covers are fine.
  StageSegment edge{tokens, 1, table};
  EXPECT_TRUE((*r)->Run({&edge, 1}, hidden).ok());
}

}  // namespace
}  // namespace sparrow
