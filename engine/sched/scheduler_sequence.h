#pragma once
// The scheduler's own: a request's state while it is queued or runs, shared by the files the
// Scheduler is written in (admission, the step, memory plans). Not for other modules.
#include <chrono>
#include <memory>
#include <vector>

#include "engine/kv/sequence_kv.h"
#include "engine/runtime/sampler.h"
#include "engine/sched/scheduler.h"

namespace sparrow {

using SchedulerClock = std::chrono::steady_clock;

inline double MsBetween(SchedulerClock::time_point a, SchedulerClock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

struct Scheduler::Sequence {
  GenerationRequest req;
  std::vector<int32_t> tokens;  // prompt then generated tokens; recomputed after preemption
  int64_t n_prompt = 0;
  int64_t n_computed = 0;  // positions whose keys/values are in the cache
  int64_t n_generated = 0;
  int64_t cached_prompt = 0;
  int64_t preemptions = 0;
  std::unique_ptr<SequenceKv> kv;
  std::unique_ptr<Sampler> sampler;
  SchedulerClock::time_point submitted, admitted, first_token;
  bool has_first_token = false;
  bool done = false;
  bool in_flight = false;  // in a batch the forward pass has not landed yet
  // Other members of this sequence's group (same prompt): they fork from it once its prompt
  // is computed.
  std::vector<std::unique_ptr<Sequence>> followers;
};

}  // namespace sparrow
