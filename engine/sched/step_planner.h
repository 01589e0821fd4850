#pragma once
// StepPlanner: the policy of the step loop, apart from the loop. It holds the waiting and the
// running sequences and their KV blocks; Schedule() says what the next step computes (StepPlan),
// Update() takes what it computed and the tokens chosen (StepOutputs). It never runs the forward
// pass, never sees logits and never calls a sink but to poll RequestSink::Cancelled, so it can be
// tested with token ids alone. The engine loop (Scheduler) owns the thread, the forward pass,
// token choice and the sinks.
// Several plans may be in flight at once (a pipeline): their sequences are left out of later
// plans until their Update. Not thread-safe: the scheduler thread owns it.
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/common/status.h"
#include "engine/sched/step_plan.h"

namespace sparrow {

class StepPlanner {
 public:
  virtual ~StepPlanner() = default;

  // Queues a sequence (a group leader, its members in `followers`) behind the others.
  virtual void Enqueue(std::unique_ptr<Sequence> seq) = 0;
  // Drops cancelled sequences, admits waiting ones while blocks allow, and (limits.batch) forms
  // the next batch, preempting the newest sequences when decoding runs the KV pool dry.
  virtual StepPlan Schedule(const StepLimits& limits) = 0;
  // Takes what `plan` computed: advances its sequences, forks group members, appends the chosen
  // tokens and finishes what reached its end.
  virtual StepUpdate Update(const StepPlan& plan, const StepOutputs& outputs) = 0;

  // Preempts every running sequence (none may be in flight): they resume later from the start of
  // what the prefix cache still holds. Returns how many.
  virtual int64_t PreemptAll() = 0;
  // Fails every running sequence (none in flight) with `why`.
  virtual std::vector<std::unique_ptr<Sequence>> FailRunning(const Status& why) = 0;
  // Cancels everything, running and waiting (none in flight).
  virtual std::vector<std::unique_ptr<Sequence>> CancelAll() = 0;
  // Resizes the KV pool to `blocks` (none in flight), preempting the newest sequences while the
  // blocks in use do not fit; `preempted` says how many were.
  virtual Status ResizeKv(int64_t blocks, int64_t* preempted) = 0;

  virtual int64_t waiting() const = 0;  // queued requests, group members counted
  virtual int64_t running() const = 0;
  virtual int64_t preemptions() const = 0;  // since the start
  bool has_work() const { return waiting() > 0 || running() > 0; }
};

}  // namespace sparrow
