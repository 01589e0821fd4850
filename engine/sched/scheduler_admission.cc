// The Scheduler's queue: admitting waiting requests while KV blocks allow, preempting the newest
// when they run out, finishing sequences.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "engine/sched/scheduler.h"
#include "engine/sched/scheduler_sequence.h"

namespace sparrow {

using Clock = SchedulerClock;

void Scheduler::Finish(Sequence& s, FinishReason reason, Status status) {
  if (s.done) return;
  s.done = true;
  ReleaseFollowers(s);
  const auto now = Clock::now();
  FinishInfo info;
  info.reason = reason;
  info.status = std::move(status);
  info.prompt_tokens = s.n_prompt;
  info.cached_prompt_tokens = s.cached_prompt;
  info.completion_tokens = s.n_generated;
  info.queue_ms = s.admitted.time_since_epoch().count() ? MsBetween(s.submitted, s.admitted)
                                                        : MsBetween(s.submitted, now);
  info.ttft_ms = s.has_first_token ? MsBetween(s.submitted, s.first_token) : 0;
  info.total_ms = MsBetween(s.submitted, now);
  info.preemptions = s.preemptions;
  if (s.kv) {
    s.kv->PublishFullBlocks(s.tokens, s.n_computed);  // later turns of a chat reuse them
    s.kv->ReleaseAll();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (reason == FinishReason::kCancelled)
      ++stats_.requests_cancelled;
    else if (reason == FinishReason::kError)
      ++stats_.requests_failed;
    else
      ++stats_.requests_finished;
    // Whoever hears of the finish sees the blocks already returned, and this sequence no
    // longer running (it leaves running_ after the step): a client that sends its next
    // request on hearing the answer must not find it still counted (admission at the floor).
    stats_.kv = kv_.Stats();
    stats_.running =
        std::count_if(running_.begin(), running_.end(), [](const auto& r) { return !r->done; });
  }
  s.req.sink->OnFinish(info);
}

Scheduler::Sequence* Scheduler::PreemptNewest() {
  auto it =
      std::find_if(running_.rbegin(), running_.rend(), [](const auto& s) { return !s->in_flight; });
  if (it == running_.rend()) return nullptr;
  std::unique_ptr<Sequence> s = std::move(*it);
  running_.erase(std::next(it).base());
  // Its full blocks stay in the prefix cache: the recompute may find them there.
  s->kv->PublishFullBlocks(s->tokens, s->n_computed);
  s->kv->ReleaseAll();
  s->kv.reset();
  s->n_computed = 0;
  ++s->preemptions;
  Sequence* const p = s.get();
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.preemptions;
  waiting_.push_front(std::move(s));
  CountWaitingLocked();
  return p;
}

void Scheduler::Admit() {
  while (static_cast<int64_t>(running_.size()) < opts_.max_running) {
    std::unique_ptr<Sequence> seq;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (waiting_.empty()) break;
      // FCFS, but interactive requests go before batch ones.
      auto it = std::find_if(waiting_.begin(), waiting_.end(),
                             [](const auto& s) { return s->req.interactive; });
      if (it == waiting_.end()) it = waiting_.begin();
      // A group is admitted whole, so that its members can fork from the leader.
      const int64_t members = 1 + static_cast<int64_t>((*it)->followers.size());
      if (!running_.empty() &&
          static_cast<int64_t>(running_.size()) + members > opts_.max_running) {
        break;
      }
      seq = std::move(*it);
      waiting_.erase(it);
      CountWaitingLocked();
    }
    if (seq->req.sink->Cancelled()) {
      Finish(*seq, FinishReason::kCancelled);
      continue;
    }
    seq->kv = std::make_unique<SequenceKv>(&kv_);
    const int64_t n = static_cast<int64_t>(seq->tokens.size());
    // At least the last token is computed, so it yields logits.
    const int64_t cached = seq->kv->AttachPrefix(seq->tokens, n - 1);
    if (!seq->kv->Reserve(n)) {
      seq->kv.reset();
      if (running_.empty()) {
        Finish(*seq, FinishReason::kError,
               ResourceExhausted("the KV cache cannot hold this request's " + std::to_string(n) +
                                 " tokens"));
        continue;
      }
      // Wait for running sequences to free blocks; keep its place at the front.
      std::lock_guard<std::mutex> lock(mu_);
      waiting_.push_front(std::move(seq));
      CountWaitingLocked();
      break;
    }
    seq->n_computed = cached;
    if (seq->preemptions == 0) {
      seq->cached_prompt = cached;
      seq->admitted = Clock::now();
      seq->req.sink->OnAdmitted();
    }
    running_.push_back(std::move(seq));
  }
  // A request leaves `waiting` here; without this it would show in neither gauge until the
  // step ends, and an observer could take the server for idle.
  std::lock_guard<std::mutex> lock(mu_);
  stats_.running = static_cast<int64_t>(running_.size());
  stats_.kv = kv_.Stats();
}

}  // namespace sparrow
