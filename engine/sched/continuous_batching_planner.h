#pragma once
// ContinuousBatchingPlanner: the StepPlanner of continuous batching. Admits waiting requests
// first come first served (interactive ones before batch ones, a group whole) while KV blocks
// allow, reusing cached prefix blocks; puts every decoding sequence's next token in the step,
// then prompt chunks within the token budget (capped by the step time model so streams keep
// flowing); in a pipeline gives each batch its share of the decoding sequences; preempts the
// newest sequence when decoding runs the pool dry rather than failing a request.
// Not thread-safe: the scheduler thread owns it.
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/kv/kv_block_pool.h"
#include "engine/sched/step_planner.h"
#include "engine/sched/step_time_model.h"

namespace sparrow {

struct PlannerOptions {
  int64_t n_ctx = 2048;                 // positions one sequence may use (prompt + output)
  int64_t max_running = 16;             // sequences decoding at once
  double step_time_target_ms = 0;       // StepTimeModel's; 0: the token budget alone decides
  std::function<bool(int32_t)> is_eog;  // end-of-generation tokens; required
  // Speculative decoding: drafts for the decoding sequences of a step, each at most its
  // spec.max_draft tokens, into spec.draft (speculator.h); null: no drafting. Drafts shorter
  // than draft_min are dropped; none is longer than draft_max.
  std::function<void(std::span<Sequence* const>)> propose;
  int64_t draft_max = 0;
  int64_t draft_min = 0;
  // A sequence reaching n_ctx before max_tokens keeps its first GenerationRequest::n_keep tokens,
  // drops half of the rest and goes on (llama.cpp's context shift: context_shift.h); off: it
  // finishes with kContext.
  bool context_shift = false;
  // The model's attention (ModelConfig::causal). Non-causal (an encoder's): a prompt is computed
  // whole in one step (alone when it exceeds the token budget), and its keys and values are
  // never taken from or given to the prefix cache.
  bool causal = true;
};

class ContinuousBatchingPlanner final : public StepPlanner {
 public:
  // `kv` must outlive the planner.
  ContinuousBatchingPlanner(KvBlockPool* kv, PlannerOptions options);
  ~ContinuousBatchingPlanner() override;

  void Enqueue(std::unique_ptr<Sequence> seq) override;
  StepPlan Schedule(const StepLimits& limits) override;
  StepUpdate Update(const StepPlan& plan, const StepOutputs& outputs) override;
  int64_t PreemptAll() override;
  std::vector<std::unique_ptr<Sequence>> FailRunning(const Status& why) override;
  std::vector<std::unique_ptr<Sequence>> CancelAll() override;
  Status ResizeKv(int64_t blocks, int64_t* preempted) override;

  int64_t waiting() const override { return waiting_members_; }
  int64_t running() const override;
  int64_t preemptions() const override { return preemptions_; }

 private:
  // Marks `s` done with `reason`: publishes its full blocks, releases the rest, and queues its
  // group's members (they can no longer fork from it) as requests of their own.
  void MarkFinished(Sequence& s, FinishReason reason, Status status = Status::Ok());
  // Gives s's full blocks to the prefix cache (with causal attention only).
  void Publish(Sequence& s);
  // Moves the running sequences that are done to `out`.
  void SweepDone(std::vector<std::unique_ptr<Sequence>>* out);
  void Admit(StepPlan* plan);
  // Makes room for one more position of each decoding sequence; returns those it could not.
  std::vector<Sequence*> ReserveDecodeSlots();
  void FormBatch(const StepLimits& limits, const std::vector<Sequence*>& blocked, StepPlan* plan);
  // Drafts for `decoding` (speculative decoding) within `*budget` tokens, each draft's KV
  // positions reserved; a sequence whose draft does not fit decodes one token.
  void Draft(const std::vector<Sequence*>& decoding, int64_t* budget);
  // Lands a verify segment: its accepted drafts and the target's token are appended, the KV of
  // the rejected ones rolled back.
  void LandVerified(Sequence& s, const PlannedSegment& seg, const std::vector<TokenChoice>& choices,
                    StepUpdate* up);
  // Appends the chosen token to `s` and finishes it at an end-of-generation token, a stop, the
  // context's end or max_tokens; a failed choice fails `s` instead (false: nothing appended).
  bool Append(Sequence& s, const TokenChoice& choice);
  // Drops the tokens a context shift cuts from a sequence that filled the context and maps what
  // is left again: the kept head's full blocks come back from the prefix cache, the rest is
  // recomputed (a prompt chunk), its last logits giving the next token. False when the pool
  // cannot hold what is left (the caller finishes it with kContext).
  bool ShiftContext(Sequence& s);
  // Preempts the newest running sequence not in flight and puts it back at the head of the
  // queue; returns it (for identity only: the queue owns it now), or null.
  Sequence* PreemptNewest();
  void PushFront(std::unique_ptr<Sequence> s);
  void CountWaiting();

  KvBlockPool* kv_;
  PlannerOptions opts_;
  StepTimeModel step_time_;
  std::deque<std::unique_ptr<Sequence>> waiting_;  // group leaders
  int64_t waiting_members_ = 0;
  std::vector<std::unique_ptr<Sequence>> running_;  // oldest first
  int64_t preemptions_ = 0;
};

}  // namespace sparrow
