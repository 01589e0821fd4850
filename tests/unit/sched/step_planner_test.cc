// The continuous-batching step planner alone: no model and no forward pass. A real KV pool (tiny
// blocks) holds the accounting; each step is "run" by handing Update the token ids a sampler
// would have chosen.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/sched/continuous_batching_planner.h"
#include "engine/sched/step_time_model.h"

namespace sparrow {
namespace {

constexpr int32_t kEog = 2;
constexpr int64_t kBlock = 4;  // positions per KV block

// Polled by the planner; never told tokens (the engine loop does that).
class FlagSink : public RequestSink {
 public:
  bool OnToken(const TokenEvent&) override { return true; }
  void OnFinish(const FinishInfo&) override {}
  bool Cancelled() const override { return cancelled; }
  bool cancelled = false;
};

// `n` prompt tokens from `first` on (distinct prompts share no prefix block).
std::vector<int32_t> Prompt(int64_t n, int32_t first) {
  std::vector<int32_t> p;
  for (int64_t i = 0; i < n; ++i) p.push_back(first + static_cast<int32_t>(i));
  return p;
}

std::unique_ptr<Sequence> Seq(std::vector<int32_t> prompt, int64_t max_tokens,
                              std::shared_ptr<FlagSink> sink = std::make_shared<FlagSink>()) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sink = std::move(sink);
  return NewSequence(std::move(r), SchedulerClock::now());
}

// What ran: every segment succeeded, every sampler chose `token`.
StepOutputs Ran(const StepPlan& plan, int32_t token) {
  StepOutputs out;
  for (const PlannedSegment& seg : plan.segments) {
    SegmentOutput so;
    so.choices.assign(seg.samplers.size(), TokenChoice{false, token, false});
    out.segments.push_back(std::move(so));
  }
  return out;
}

class StepPlannerTest : public ::testing::Test {
 protected:
  void Make(int64_t blocks, int64_t max_running = 16, int64_t n_ctx = 256, double target_ms = 0,
            std::function<void(std::span<Sequence* const>)> propose = nullptr,
            bool context_shift = false, bool causal = true) {
    pool_ = std::make_unique<KvBlockPool>(1, 4, kBlock, blocks);
    PlannerOptions o;
    o.context_shift = context_shift;
    o.causal = causal;
    o.n_ctx = n_ctx;
    o.max_running = max_running;
    o.step_time_target_ms = target_ms;
    o.is_eog = [](int32_t id) { return id == kEog; };
    o.propose = std::move(propose);
    o.draft_max = 6;
    o.draft_min = 1;
    planner_ = std::make_unique<ContinuousBatchingPlanner>(pool_.get(), std::move(o));
  }
  StepPlan Schedule(int64_t budget = 128, int64_t depth = 1) {
    return planner_->Schedule({budget, depth, true});
  }
  // Schedules and runs steps, every sampler choosing `token`, until nothing runs or `steps` ran;
  // returns what finished.
  std::vector<std::unique_ptr<Sequence>> RunSteps(int steps, int32_t token = 50) {
    std::vector<std::unique_ptr<Sequence>> finished;
    for (int i = 0; i < steps && planner_->has_work(); ++i) {
      StepPlan plan = Schedule();
      for (auto& f : plan.finished) finished.push_back(std::move(f));
      StepUpdate up = planner_->Update(plan, Ran(plan, token));
      for (auto& f : up.finished) finished.push_back(std::move(f));
    }
    return finished;
  }

  std::unique_ptr<KvBlockPool> pool_;
  std::unique_ptr<ContinuousBatchingPlanner> planner_;
};

TEST_F(StepPlannerTest, AdmitsWhileKvBlocksAllow) {
  Make(/*blocks=*/8);
  // 7 prompt tokens: 2 blocks each, so 4 of 5 fit the pool.
  std::vector<Sequence*> seqs;
  for (int i = 0; i < 5; ++i) {
    auto s = Seq(Prompt(7, 10 + 10 * i), 4);
    seqs.push_back(s.get());
    planner_->Enqueue(std::move(s));
  }
  EXPECT_EQ(planner_->waiting(), 5);
  StepPlan plan = Schedule();
  ASSERT_EQ(plan.admitted.size(), 4u);
  EXPECT_EQ(planner_->running(), 4);
  EXPECT_EQ(planner_->waiting(), 1);
  EXPECT_EQ(pool_->used(), 8);
  ASSERT_EQ(plan.segments.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(plan.segments[i].seq, seqs[i]) << "first come, first served";
    EXPECT_EQ(plan.segments[i].pos, 0);
    EXPECT_EQ(plan.segments[i].n_tokens, 7);
    ASSERT_EQ(plan.segments[i].samplers.size(), 1u) << "the whole prompt: its logits give a token";
    EXPECT_TRUE(seqs[i]->in_flight);
  }
  EXPECT_EQ(plan.prompt_computed, 28);
  EXPECT_FALSE(seqs[4]->kv) << "the fifth waits for blocks";
}

TEST_F(StepPlannerTest, AnInteractiveRequestIsAdmittedBeforeABatchOne) {
  Make(/*blocks=*/2);
  auto batch = Seq(Prompt(7, 10), 4);
  batch->req.interactive = false;
  Sequence* batch_seq = batch.get();
  auto chat = Seq(Prompt(7, 30), 4);
  Sequence* chat_seq = chat.get();
  planner_->Enqueue(std::move(batch));
  planner_->Enqueue(std::move(chat));
  StepPlan plan = Schedule();
  ASSERT_EQ(plan.admitted.size(), 1u);
  EXPECT_EQ(plan.admitted[0], chat_seq);
  EXPECT_FALSE(batch_seq->kv);
}

TEST_F(StepPlannerTest, APromptLargerThanThePoolFailsWhenNothingRuns) {
  Make(/*blocks=*/2);
  planner_->Enqueue(Seq(Prompt(12, 10), 4));  // 3 blocks
  StepPlan plan = Schedule();
  ASSERT_EQ(plan.finished.size(), 1u);
  EXPECT_EQ(plan.finished[0]->finish_reason, FinishReason::kError);
  EXPECT_EQ(plan.finished[0]->finish_status.code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(plan.segments.empty());
  EXPECT_FALSE(planner_->has_work());
}

TEST_F(StepPlannerTest, LongPromptsArePrefilledInChunksWithinTheBudget) {
  Make(/*blocks=*/16);
  auto a = Seq(Prompt(12, 10), 8);
  Sequence* s = a.get();
  planner_->Enqueue(std::move(a));
  const int64_t want[][2] = {{0, 5}, {5, 5}, {10, 2}};
  for (const auto& [pos, len] : want) {
    StepPlan plan = Schedule(/*budget=*/5);
    ASSERT_EQ(plan.segments.size(), 1u);
    EXPECT_EQ(plan.segments[0].pos, pos);
    EXPECT_EQ(plan.segments[0].n_tokens, len);
    EXPECT_EQ(plan.segments[0].samplers.empty(), pos + len < 12) << "no token mid-prompt";
    planner_->Update(plan, Ran(plan, 77));
  }
  EXPECT_EQ(s->n_computed, 12);
  ASSERT_EQ(s->tokens.size(), 13u);
  EXPECT_EQ(s->tokens.back(), 77);

  // A decoding stream goes first; the next prompt gets what the budget leaves.
  planner_->Enqueue(Seq(Prompt(20, 40), 8));
  StepPlan plan = Schedule(/*budget=*/5);
  ASSERT_EQ(plan.segments.size(), 2u);
  EXPECT_EQ(plan.segments[0].seq, s);
  EXPECT_EQ(plan.segments[0].pos, 12);
  EXPECT_EQ(plan.segments[0].n_tokens, 1);
  EXPECT_EQ(plan.decoded, 1);
  EXPECT_EQ(plan.segments[1].n_tokens, 4);
  EXPECT_EQ(plan.prompt_computed, 4);
}

// An encoder (non-causal attention) computes each input whole in one step, alone when it exceeds
// the budget, and neither reuses nor publishes its blocks (its keys depend on the whole input).
TEST_F(StepPlannerTest, AnEncoderComputesEachInputWholeAndSharesNoBlocks) {
  Make(/*blocks=*/32, 16, 256, 0, nullptr, false, /*causal=*/false);
  auto embedding = [](std::vector<int32_t> prompt) {
    auto s = Seq(std::move(prompt), 1);
    s->req.embedding = PoolingType::kLast;  // would reuse a prefix with causal attention
    return s;
  };
  planner_->Enqueue(embedding(Prompt(12, 10)));
  planner_->Enqueue(embedding(Prompt(3, 100)));
  planner_->Enqueue(embedding(Prompt(12, 10)));
  const int64_t want[][2] = {{0, 12}, {0, 3}, {0, 12}};  // one input a step, whole
  for (const auto& [pos, len] : want) {
    StepPlan plan = Schedule(/*budget=*/5);
    ASSERT_EQ(plan.segments.size(), 1u);
    EXPECT_EQ(plan.segments[0].pos, pos);
    EXPECT_EQ(plan.segments[0].n_tokens, len);
    EXPECT_TRUE(plan.segments[0].samplers.empty());
    StepUpdate up = planner_->Update(plan, Ran(plan, 77));
    EXPECT_EQ(up.finished.size(), 1u);
    EXPECT_EQ(pool_->Stats().cached_blocks, 0) << "an encoder's blocks are never published";
  }
  EXPECT_FALSE(planner_->has_work());
}

TEST_F(StepPlannerTest, ThePromptBesideDecodingStreamsIsCappedByTheStepTimeModel) {
  Make(/*blocks=*/64, 16, 256, /*target_ms=*/30);
  planner_->Enqueue(Seq(Prompt(4, 10), 100));
  StepPlan plan = Schedule();
  planner_->Update(plan, Ran(plan, 60));  // prompt computed, untimed
  plan = Schedule();
  ASSERT_EQ(plan.decoded, 1);
  StepOutputs out = Ran(plan, 61);
  out.step_ms = 2;  // 2 ms per decoded token
  planner_->Update(plan, out);

  planner_->Enqueue(Seq(Prompt(200, 20), 4));
  plan = Schedule(/*budget=*/128);
  ASSERT_EQ(plan.segments.size(), 2u);
  EXPECT_EQ(plan.prompt_computed, 127) << "prompt cost unknown yet: the whole budget left";
  out = Ran(plan, 62);
  out.step_ms = 2 + 127;  // 1 ms per prompt token
  planner_->Update(plan, out);

  StepTimeModel same(30);
  same.Observe(1, 0, 2);
  same.Observe(1, 127, 2 + 127);
  plan = Schedule(/*budget=*/128);
  ASSERT_EQ(plan.segments.size(), 2u);
  EXPECT_EQ(plan.prompt_computed, same.PrefillCap(1, 127));
  EXPECT_EQ(plan.prompt_computed, 28) << "(30 ms - 2 ms decoding) at 1 ms a prompt token";
}

TEST_F(StepPlannerTest, TheNewestIsPreemptedWhenDecodingRunsThePoolDry) {
  Make(/*blocks=*/3);
  // One full block each; the next token of each needs a second block.
  std::vector<Sequence*> seqs;
  for (int i = 0; i < 3; ++i) {
    auto s = Seq(Prompt(4, 10 + 10 * i), 3);
    seqs.push_back(s.get());
    planner_->Enqueue(std::move(s));
  }
  StepPlan plan = Schedule();
  ASSERT_EQ(plan.segments.size(), 3u);
  planner_->Update(plan, Ran(plan, 70));
  EXPECT_EQ(pool_->used(), 3);

  plan = Schedule();
  // The first needed a block: the newest gave its own back, then the second was the newest left.
  ASSERT_EQ(plan.segments.size(), 1u);
  EXPECT_EQ(plan.segments[0].seq, seqs[0]);
  EXPECT_EQ(planner_->preemptions(), 2);
  EXPECT_EQ(planner_->running(), 1);
  EXPECT_EQ(planner_->waiting(), 2);
  for (int i = 1; i < 3; ++i) {
    EXPECT_EQ(seqs[i]->preemptions, 1);
    EXPECT_EQ(seqs[i]->n_computed, 0) << "recomputed from what the prefix cache holds";
    EXPECT_FALSE(seqs[i]->kv);
    EXPECT_EQ(seqs[i]->tokens.size(), 5u) << "the token it generated is kept";
  }
  planner_->Update(plan, Ran(plan, 71));

  // Everyone finishes, each with its three tokens, the preempted ones after resuming.
  std::vector<std::unique_ptr<Sequence>> done = RunSteps(50);
  ASSERT_EQ(done.size(), 3u);
  for (const auto& s : done) {
    EXPECT_EQ(s->finish_reason, FinishReason::kLength);
    EXPECT_EQ(s->n_generated, 3);
  }
  EXPECT_EQ(pool_->used(), 0);
}

TEST_F(StepPlannerTest, ShrinkingTheKvPoolPreemptsTheNewest) {
  Make(/*blocks=*/8);
  for (int i = 0; i < 3; ++i) planner_->Enqueue(Seq(Prompt(7, 10 + 10 * i), 8));
  StepPlan plan = Schedule();
  planner_->Update(plan, Ran(plan, 70));
  ASSERT_EQ(pool_->used(), 6);
  int64_t preempted = 0;
  ASSERT_TRUE(planner_->ResizeKv(4, &preempted).ok());
  EXPECT_EQ(preempted, 1);
  EXPECT_EQ(pool_->n_blocks(), 4);
  EXPECT_EQ(planner_->running(), 2);
  EXPECT_EQ(planner_->waiting(), 1);
}

TEST_F(StepPlannerTest, CancelledRequestsLeaveTheQueueAndGiveTheirBlocksBack) {
  Make(/*blocks=*/4);
  auto running_sink = std::make_shared<FlagSink>();
  auto waiting_sink = std::make_shared<FlagSink>();
  auto flight_sink = std::make_shared<FlagSink>();
  planner_->Enqueue(Seq(Prompt(7, 10), 8, running_sink));
  planner_->Enqueue(Seq(Prompt(7, 20), 8, flight_sink));
  planner_->Enqueue(Seq(Prompt(7, 30), 8, waiting_sink));  // no blocks left for it
  StepPlan plan = Schedule();
  planner_->Update(plan, Ran(plan, 70));
  EXPECT_EQ(planner_->waiting(), 1);

  running_sink->cancelled = true;
  waiting_sink->cancelled = true;
  plan = Schedule();
  ASSERT_EQ(plan.finished.size(), 2u);
  for (const auto& s : plan.finished) EXPECT_EQ(s->finish_reason, FinishReason::kCancelled);
  EXPECT_EQ(planner_->waiting(), 0);
  EXPECT_EQ(planner_->running(), 1);
  ASSERT_EQ(plan.segments.size(), 1u);

  // Cancelled while its step ran: the loop chose no token for it.
  flight_sink->cancelled = true;
  StepOutputs out = Ran(plan, 71);
  out.segments[0].choices[0].cancelled = true;
  StepUpdate up = planner_->Update(plan, out);
  ASSERT_EQ(up.finished.size(), 1u);
  EXPECT_EQ(up.finished[0]->finish_reason, FinishReason::kCancelled);
  EXPECT_EQ(up.generated, 0);
  EXPECT_FALSE(planner_->has_work());
  EXPECT_EQ(pool_->used(), 0);
}

TEST_F(StepPlannerTest, AGroupComputesItsPromptOnceAndForks) {
  Make(/*blocks=*/8);
  // 6 prompt tokens: one full block and a partial one, shared by the three members.
  auto leader = Seq(Prompt(6, 10), 4);
  Sequence* lead = leader.get();
  std::vector<Sequence*> members = {lead};
  auto cancelled_sink = std::make_shared<FlagSink>();
  for (int i = 0; i < 3; ++i) {
    auto f = Seq(Prompt(6, 10), 4, i == 2 ? cancelled_sink : std::make_shared<FlagSink>());
    members.push_back(f.get());
    leader->followers.push_back(std::move(f));
  }
  planner_->Enqueue(std::move(leader));
  EXPECT_EQ(planner_->waiting(), 4);
  StepPlan plan = Schedule();
  EXPECT_EQ(planner_->waiting(), 0) << "admitted whole";
  ASSERT_EQ(plan.segments.size(), 1u) << "the prompt once";
  const std::vector<Sequence*> samplers = {members[1], members[2], members[3], lead};
  EXPECT_EQ(plan.segments[0].samplers, samplers);
  EXPECT_EQ(pool_->used(), 2);

  StepOutputs out;
  out.segments.resize(1);
  out.segments[0].choices = {
      {false, 81, false}, {false, 82, false}, {true, 0, false}, {false, 80, false}};
  StepUpdate up = planner_->Update(plan, out);
  ASSERT_EQ(up.finished.size(), 1u);
  EXPECT_EQ(up.finished[0].get(), members[3]);
  EXPECT_EQ(up.finished[0]->finish_reason, FinishReason::kCancelled);
  EXPECT_EQ(up.generated, 3);
  EXPECT_EQ(planner_->running(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(members[i]->tokens.back(), 80 + i);
    EXPECT_EQ(members[i]->n_computed, 6);
  }
  EXPECT_EQ(members[1]->cached_prompt, 6) << "a member computed none of the prompt";
  EXPECT_EQ(pool_->used(), 2) << "still shared";

  // Each writes position 6 into the shared partial block: two copy it, the last keeps it.
  plan = Schedule();
  EXPECT_EQ(plan.decoded, 3);
  EXPECT_EQ(pool_->used(), 4);
}

TEST_F(StepPlannerTest, SequencesFinishAtEogStopContextOrMaxTokens) {
  Make(/*blocks=*/32, 16, /*n_ctx=*/10);
  auto eog = Seq(Prompt(4, 10), 8);
  auto stop = Seq(Prompt(4, 20), 8);
  auto length = Seq(Prompt(4, 30), 1);
  auto context = Seq(Prompt(9, 40), 8);
  std::vector<Sequence*> seqs = {eog.get(), stop.get(), length.get(), context.get()};
  for (auto* s : {&eog, &stop, &length, &context}) planner_->Enqueue(std::move(*s));
  StepPlan plan = Schedule();
  ASSERT_EQ(plan.segments.size(), 4u);
  StepOutputs out = Ran(plan, 90);
  out.segments[0].choices[0].token = kEog;
  out.segments[1].choices[0].stop = true;
  StepUpdate up = planner_->Update(plan, out);
  ASSERT_EQ(up.finished.size(), 4u);
  const FinishReason want[] = {FinishReason::kStop, FinishReason::kStop, FinishReason::kLength,
                               FinishReason::kContext};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(up.finished[i].get(), seqs[i]);
    EXPECT_EQ(up.finished[i]->finish_reason, want[i]) << i;
    EXPECT_EQ(up.finished[i]->n_generated, 1);
  }
  EXPECT_EQ(pool_->used(), 0);

  // Their full blocks were published: the same prompt again is served from the prefix cache.
  planner_->Enqueue(Seq(Prompt(9, 40), 8));
  plan = Schedule();
  ASSERT_EQ(plan.admitted.size(), 1u);
  EXPECT_EQ(plan.admitted[0]->cached_prompt, 8);
  EXPECT_EQ(plan.segments[0].pos, 8);
}

// llama.cpp's context shift: at the context's end the first n_keep tokens stay, half of the rest
// goes, the head's blocks come back from the prefix cache and the rest is computed again as a
// prompt chunk whose last logits give the next token; the request ends at max_tokens (kLength).
TEST_F(StepPlannerTest, ContextShiftKeepsTheHeadAndDropsHalfOfTheRest) {
  Make(/*blocks=*/32, 16, /*n_ctx=*/16, 0, nullptr, /*context_shift=*/true);
  auto seq = Seq(Prompt(10, 100), /*max_tokens=*/20);
  seq->req.n_keep = 4;
  Sequence* s = seq.get();
  planner_->Enqueue(std::move(seq));
  std::vector<std::unique_ptr<Sequence>> finished;
  std::vector<int32_t> expect = Prompt(10, 100);
  bool shifted = false;
  int64_t shifts = 0;
  for (int32_t step = 0; planner_->has_work() && step < 64; ++step) {
    StepPlan plan = Schedule();
    ASSERT_EQ(plan.segments.size(), 1u);
    if (shifted) {
      // The step after the shift: positions 4.. of the 11 left, computed again.
      EXPECT_EQ(plan.segments[0].pos, 4);
      EXPECT_EQ(plan.segments[0].n_tokens, 7);
      shifted = false;
    }
    const auto token = static_cast<int32_t>(200 + step);
    StepUpdate up = planner_->Update(plan, Ran(plan, token));
    expect.push_back(token);
    if (static_cast<int64_t>(expect.size()) == 16) {
      // Filled at 15 computed positions: keep 4, drop (15 - 4) / 2 = 5.
      expect.erase(expect.begin() + 4, expect.begin() + 9);
      ASSERT_EQ(s->tokens, expect);
      EXPECT_EQ(s->n_computed, 4);
      EXPECT_EQ(s->context_shifts, ++shifts);
      shifted = true;
    }
    for (auto& f : up.finished) finished.push_back(std::move(f));
  }
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0]->finish_reason, FinishReason::kLength);
  EXPECT_EQ(finished[0]->n_generated, 20);
  EXPECT_EQ(finished[0]->context_shifts, 3);
  EXPECT_EQ(pool_->used(), 0);
}

TEST_F(StepPlannerTest, FailuresFailOnlyTheirSequences) {
  Make(/*blocks=*/16);
  for (int i = 0; i < 3; ++i) planner_->Enqueue(Seq(Prompt(4, 10 + 10 * i), 8));
  StepPlan plan = Schedule();
  StepOutputs out = Ran(plan, 70);
  out.segments[1].status = IoError("flash read");
  out.segments[1].choices.clear();
  StepUpdate up = planner_->Update(plan, out);
  ASSERT_EQ(up.finished.size(), 1u);
  EXPECT_EQ(up.finished[0]->finish_reason, FinishReason::kError);
  EXPECT_EQ(up.finished[0]->finish_status.code(), StatusCode::kIoError);
  EXPECT_EQ(planner_->running(), 2);

  plan = Schedule();
  out = {};
  out.status = Internal("the step failed");
  up = planner_->Update(plan, out);
  EXPECT_EQ(up.finished.size(), 2u);
  EXPECT_FALSE(planner_->has_work());
  EXPECT_EQ(pool_->used(), 0);
}

TEST_F(StepPlannerTest, APipelineGivesEachBatchItsShareOfTheDecodingStreams) {
  Make(/*blocks=*/32);
  for (int i = 0; i < 4; ++i) planner_->Enqueue(Seq(Prompt(4, 10 + 10 * i), 8));
  StepPlan plan = Schedule();
  planner_->Update(plan, Ran(plan, 70));
  StepPlan first = Schedule(128, /*depth=*/2);
  StepPlan second = Schedule(128, /*depth=*/2);
  ASSERT_EQ(first.decoded, 2);
  ASSERT_EQ(second.decoded, 2);
  EXPECT_NE(first.segments[0].seq, second.segments[0].seq);
  EXPECT_NE(first.segments[1].seq, second.segments[1].seq);
  EXPECT_TRUE(Schedule(128, 2).segments.empty()) << "all four in flight";
  planner_->Update(first, Ran(first, 71));
  planner_->Update(second, Ran(second, 72));
  EXPECT_EQ(planner_->running(), 4);
}

TEST_F(StepPlannerTest, CancelAllEndsRunningWaitingAndGroupMembers) {
  Make(/*blocks=*/2);
  planner_->Enqueue(Seq(Prompt(7, 10), 8));
  auto leader = Seq(Prompt(7, 20), 8);
  leader->followers.push_back(Seq(Prompt(7, 20), 8));
  planner_->Enqueue(std::move(leader));
  StepPlan plan = Schedule();
  planner_->Update(plan, Ran(plan, 70));
  EXPECT_EQ(planner_->running(), 1);
  EXPECT_EQ(planner_->waiting(), 2);
  std::vector<std::unique_ptr<Sequence>> done = planner_->CancelAll();
  EXPECT_EQ(done.size(), 3u);
  for (const auto& s : done) EXPECT_EQ(s->finish_reason, FinishReason::kCancelled);
  EXPECT_FALSE(planner_->has_work());
  EXPECT_EQ(pool_->used(), 0);
}

// Speculative decoding's verify step: the draft rides in the decode segment, the accepted prefix
// and the target's token are appended, the blocks of rejected drafts go back to the pool, and
// only accepted tokens reach the prefix cache.
TEST_F(StepPlannerTest, AVerifySegmentKeepsTheAcceptedDraftsAndRollsBackTheRest) {
  Make(/*blocks=*/16, 16, 256, 0, [](std::span<Sequence* const> seqs) {
    for (Sequence* s : seqs) {
      s->spec.draft = {60, 61, 62, 63, 64, 65, 66, 67};  // longer than allowed: cut to the room
      s->spec.source = DraftSource::kNgram;
    }
  });
  auto owned = Seq(Prompt(5, 10), 20);
  Sequence* s = owned.get();
  planner_->Enqueue(std::move(owned));
  StepPlan prefill = Schedule();
  ASSERT_EQ(prefill.segments.size(), 1u);
  EXPECT_EQ(prefill.segments[0].n_draft, 0) << "a prompt chunk carries no draft";
  planner_->Update(prefill, Ran(prefill, 50));
  ASSERT_EQ(s->tokens.size(), 6u);

  StepPlan verify = Schedule();
  ASSERT_EQ(verify.segments.size(), 1u);
  const PlannedSegment& seg = verify.segments[0];
  EXPECT_EQ(seg.pos, 5);
  EXPECT_EQ(seg.n_draft, 6);  // draft_max
  EXPECT_EQ(seg.n_tokens, 7);
  EXPECT_EQ(verify.drafted, 6);
  EXPECT_EQ(s->spec.verify, (std::vector<int32_t>{50, 60, 61, 62, 63, 64, 65}));
  EXPECT_EQ(pool_->used(), 3) << "positions 0..11 reserved";
  // The target agreed with two drafts, then chose 99.
  StepOutputs out;
  out.segments.push_back(
      {Status::Ok(), {{false, 60, false}, {false, 61, false}, {false, 99, false}}});
  StepUpdate up = planner_->Update(verify, out);
  EXPECT_EQ(up.generated, 3);
  EXPECT_EQ(up.drafted[static_cast<int>(DraftSource::kNgram)], 6);
  EXPECT_EQ(up.accepted[static_cast<int>(DraftSource::kNgram)], 2);
  EXPECT_EQ(s->tokens, (std::vector<int32_t>{10, 11, 12, 13, 14, 50, 60, 61, 99}));
  EXPECT_EQ(s->n_computed, 8);
  EXPECT_EQ(s->kv->n_blocks(), 2);
  EXPECT_EQ(pool_->used(), 2) << "the rejected drafts' block is free";
  // The two full blocks hold accepted tokens only, and are in the prefix cache.
  SequenceKv other(pool_.get());
  EXPECT_EQ(other.AttachPrefix(s->tokens, 8), 8);
  other.ReleaseAll();

  // Everything rejected: only the target's own token is added; the room now ends at max_tokens.
  s->req.max_tokens = 6;
  StepPlan next = Schedule();
  ASSERT_EQ(next.segments.size(), 1u);
  EXPECT_EQ(next.segments[0].n_draft, 1) << "room for one draft and the target's token";
  StepOutputs rejected;
  rejected.segments.push_back({Status::Ok(), {{false, 77, false}}});
  planner_->Update(next, rejected);
  EXPECT_EQ(s->tokens.back(), 77);
  EXPECT_EQ(s->n_computed, 9);
  EXPECT_EQ(s->kv->n_blocks(), 3);
}

TEST_F(StepPlannerTest, AStopInsideTheAcceptedDraftsEndsTheSequenceThere) {
  Make(/*blocks=*/16, 16, 256, 0, [](std::span<Sequence* const> seqs) {
    for (Sequence* s : seqs) s->spec.draft = {60, kEog, 62};
  });
  auto owned = Seq(Prompt(3, 10), 20);
  planner_->Enqueue(std::move(owned));
  StepPlan prefill = Schedule();
  planner_->Update(prefill, Ran(prefill, 50));
  StepPlan verify = Schedule();
  ASSERT_EQ(verify.segments.size(), 1u);
  EXPECT_EQ(verify.segments[0].n_draft, 3);
  // The engine loop stops emitting at the end-of-generation token.
  StepOutputs out;
  out.segments.push_back({Status::Ok(), {{false, 60, false}, {false, kEog, false}}});
  StepUpdate up = planner_->Update(verify, out);
  ASSERT_EQ(up.finished.size(), 1u);
  EXPECT_EQ(up.finished[0]->finish_reason, FinishReason::kStop);
  EXPECT_EQ(up.finished[0]->tokens, (std::vector<int32_t>{10, 11, 12, 50, 60, kEog}));
  EXPECT_EQ(pool_->used(), 0);
}

}  // namespace
}  // namespace sparrow
