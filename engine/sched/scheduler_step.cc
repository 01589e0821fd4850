// The Scheduler's step: choosing a batch of decoding sequences and prefill chunks, submitting it
// to the forward pass, landing it (sampling, streaming, finishing).
#include <spdlog/spdlog.h>

#include <algorithm>

#include "engine/sched/scheduler.h"
#include "engine/sched/scheduler_sequence.h"

namespace sparrow {

using Clock = SchedulerClock;

bool Scheduler::Step() {
  // Drop cancelled sequences first: their blocks go back to the pool before we allocate. One in
  // flight is finished when its batch lands (its blocks are in use until then).
  for (auto& s : running_) {
    if (!s->done && !s->in_flight && s->req.sink->Cancelled()) Finish(*s, FinishReason::kCancelled);
  }
  std::erase_if(running_, [](const auto& s) { return s->done; });
  // Waiting requests whose clients left must not hold queue slots until they would have been
  // admitted (new requests would get "queue full" meanwhile).
  std::vector<std::unique_ptr<Sequence>> abandoned;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if ((*it)->req.sink->Cancelled()) {
        abandoned.push_back(std::move(*it));
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
    if (!abandoned.empty()) CountWaitingLocked();
  }
  for (auto& s : abandoned) Finish(*s, FinishReason::kCancelled);  // members still wanted requeue
  Admit();
  if (running_.empty()) return false;
  if (HoldForRemote()) return true;

  // Decoding sequences need one more position each; when the pool is dry, preempt the newest
  // (not one in flight: if only those are left, the sequence waits for their batches to land).
  std::vector<Sequence*> blocked;
  for (size_t i = 0; i < running_.size(); ++i) {
    Sequence& s = *running_[i];
    const int64_t n = static_cast<int64_t>(s.tokens.size());
    if (s.in_flight || s.n_computed != n - 1) continue;  // still prefilling: blocks reserved
    // The write at n - 1 may land in a block shared with a group member: copied first.
    while (!s.kv->Reserve(n, n - 1)) {
      Sequence* p = PreemptNewest();
      if (p == nullptr) {
        blocked.push_back(&s);
        break;
      }
      if (p == &s) break;
    }
  }
  if (running_.empty()) return true;

  // Decode tokens first (they keep streams flowing), then prefill chunks within the budget.
  // In a pipeline each batch takes its share of the decoding sequences, so that the devices
  // have as many batches to work on as there are devices.
  Flight fl;
  auto ready = [&](const Sequence& s) {
    return !s.in_flight && s.kv && std::find(blocked.begin(), blocked.end(), &s) == blocked.end();
  };
  int64_t decoding = 0;
  for (auto& s : running_) decoding += s->n_computed == static_cast<int64_t>(s->tokens.size()) - 1;
  const int64_t depth = PipelineDepth();
  int64_t decode_cap = (decoding + depth - 1) / depth;
  // The scratch's budget, and short of memory no step outgrowing the buffers the ones before it
  // grew (prompt chunks and recomputed sequences wait or go in smaller pieces).
  int64_t budget = scratch_->StepCap(opts_.step_token_budget);
  for (auto& s : running_) {
    const int64_t n = static_cast<int64_t>(s->tokens.size());
    if (s->n_computed == n - 1 && ready(*s) && budget > 0 && decode_cap > 0) {
      fl.segs.push_back({s.get()->kv.get(), {&s->tokens[n - 1], 1}, n - 1, false});
      fl.owners.push_back(s.get());
      --budget;
      --decode_cap;
    }
  }
  fl.decoded = static_cast<int64_t>(fl.segs.size());
  budget = step_time_.PrefillCap(fl.decoded, budget);
  for (auto& s : running_) {
    const int64_t n = static_cast<int64_t>(s->tokens.size());
    if (s->n_computed < n - 1 && ready(*s) && budget > 0) {
      const int64_t len = std::min(budget, n - s->n_computed);
      fl.segs.push_back({s->kv.get(),
                         {&s->tokens[s->n_computed], static_cast<size_t>(len)},
                         s->n_computed,
                         false});
      fl.owners.push_back(s.get());
      budget -= len;
      fl.prompt_computed += len;
    }
  }
  const bool submitting = !fl.segs.empty();
  if (submitting) {
    scratch_->Observe(fl.decoded + fl.prompt_computed);
    fl.start = Clock::now();
    if (Status st = fp_.Submit(fl.segs); !st.ok()) {
      spdlog::error("forward pass failed: {}", st.ToString());
      for (Sequence* s : fl.owners) Finish(*s, FinishReason::kError, st);
      std::erase_if(running_, [](const auto& s) { return s->done; });
      return true;
    }
    for (Sequence* s : fl.owners) s->in_flight = true;
    flights_.push_back(std::move(fl));
  }
  if (flights_.empty()) return true;
  // Land the oldest batch once the pipeline is full, or when nothing more can be sent.
  if (static_cast<int64_t>(flights_.size()) >= depth || !submitting) LandOldest();
  return true;
}

bool Scheduler::RemoteWaitLeft() {
  if (opts_.remote_down_wait.count() <= 0) return false;
  const auto now = Clock::now();
  if (!remote_down_since_) remote_down_since_ = now;
  return now - *remote_down_since_ < opts_.remote_down_wait;
}

bool Scheduler::HoldForRemote() {
  if (opts_.remote_down_wait.count() <= 0 || !flights_.empty()) return false;
  bool down = false;
  for (const auto& r : opts_.remote_layers) down = r->Unreachable() || down;
  if (!down || !RemoteWaitLeft()) return false;
  // Short waits: cancellations and the new placement are looked at between them.
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(20),
               [this] { return pending_remote_.has_value() || draining_; });
  return true;
}

int64_t Scheduler::PipelineDepth() const {
  // One batch in flight per device of the pipeline keeps them all busy; the devices of a tensor
  // split compute each layer of a batch together.
  const auto stages = std::count_if(opts_.remote_layers.begin(), opts_.remote_layers.end(),
                                    [](const auto& r) { return r->slice() == nullptr; });
  return stages == 0 || opts_.pipeline_micro_batches == 1 ? 1 : stages + 1;
}

void Scheduler::LandAll() {
  while (!flights_.empty()) LandOldest();
}

void Scheduler::LandOldest() {
  Flight fl = std::move(flights_.front());
  flights_.pop_front();
  std::vector<float> logits;
  std::vector<Status> failures;
  Status st = fp_.Collect(&logits, &failures);
  for (Sequence* s : fl.owners) s->in_flight = false;
  // Alone in the pipeline, the time from submit to landing is the step's.
  if (PipelineDepth() == 1) {
    step_time_.Observe(fl.decoded, fl.prompt_computed, MsBetween(fl.start, Clock::now()));
  }
  if (!st.ok()) {
    spdlog::error("forward pass failed: {}", st.ToString());
    for (Sequence* s : fl.owners) Finish(*s, FinishReason::kError, st);
    std::erase_if(running_, [](const auto& s) { return s->done; });
    return;
  }
  if (fp_.remote_failed()) {
    // The device of a remote range may have lost the keys and values of every sequence and of
    // the cached prefixes: the batches in flight land (failed too), the running sequences fail
    // with the step's error, and the prefix cache is forgotten, so that later requests compute
    // everything afresh.
    // Within remote_down_wait of the failure, they resume from the start instead, once a new
    // placement comes or the device answers again.
    const Status why = failures.empty() ? Unavailable("a remote layer range failed") : failures[0];
    while (!flights_.empty()) {
      Flight rest = std::move(flights_.front());
      flights_.pop_front();
      std::vector<float> ignored;
      (void)fp_.Collect(&ignored, nullptr);
      for (Sequence* s : rest.owners) s->in_flight = false;
    }
    const bool resume = RemoteWaitLeft();
    for (auto& s : running_) {
      if (!s->done && !resume) Finish(*s, FinishReason::kError, why);
    }
    std::erase_if(running_, [](const auto& s) { return s->done; });
    int64_t waiting = 0;
    while (resume && PreemptNewest() != nullptr) ++waiting;
    if (resume) {
      spdlog::warn("{}: {} running sequences wait for the device or a new placement",
                   why.ToString(), waiting);
    }
    kv_.DropCached();
    return;
  }
  remote_down_since_.reset();
  // A failed flash read costs only the sequences that needed it; their KV goes back to the pool
  // and the others carry on.
  for (size_t i = 0; i < fl.segs.size(); ++i) {
    if (failures[i].ok()) continue;
    spdlog::error("a request failed in the forward pass: {}", failures[i].ToString());
    Finish(*fl.owners[i], FinishReason::kError, failures[i]);
  }

  const int64_t n_vocab = model_.config().n_vocab;
  int64_t generated = 0;
  for (size_t i = 0; i < fl.segs.size(); ++i) {
    Sequence& s = *fl.owners[i];
    if (s.done) continue;
    s.n_computed += static_cast<int64_t>(fl.segs[i].tokens.size());
    const int64_t n = static_cast<int64_t>(s.tokens.size());
    s.kv->PublishFullBlocks(s.tokens, s.n_computed);
    if (s.n_computed < n) continue;  // mid-prompt chunk: no token yet

    std::span<const float> row(&logits[i * n_vocab], n_vocab);
    if (!s.followers.empty()) {
      // The group's prompt is computed: each member takes the blocks, the partial last one
      // copy-on-write, and samples its first token from the same logits.
      std::vector<std::unique_ptr<Sequence>> forked = std::move(s.followers);
      s.followers.clear();
      for (auto& f : forked) {
        f->kv = std::make_unique<SequenceKv>(&kv_);
        f->kv->ForkFrom(*s.kv, s.n_computed);
        f->n_computed = s.n_computed;
        f->cached_prompt = s.n_computed;
        f->admitted = s.admitted;
        if (f->req.sink->Cancelled()) {
          Finish(*f, FinishReason::kCancelled);
          continue;
        }
        EmitToken(*f, row);
        ++generated;
        if (!f->done) running_.push_back(std::move(f));
      }
    }
    // A sequence cancelled while its batch was in flight ends here.
    if (s.req.sink->Cancelled()) {
      Finish(s, FinishReason::kCancelled);
      continue;
    }
    EmitToken(s, row);
    ++generated;
  }
  std::erase_if(running_, [](const auto& s) { return s->done; });
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.generated_tokens += generated;
    stats_.prompt_tokens += fl.prompt_computed;
    ++stats_.steps;
    stats_.ffn = fp_.ffn().counters();
  }
}

void Scheduler::EmitToken(Sequence& s, std::span<const float> row) {
  TokenEvent ev;
  const size_t n_forced = s.req.forced_tokens.size();
  if (static_cast<size_t>(s.n_generated) < n_forced) {
    ev.token = s.req.forced_tokens[s.n_generated];
  } else if (!s.req.logit_bias.empty()) {
    std::vector<float> biased(row.begin(), row.end());
    for (const auto& [id, bias] : s.req.logit_bias) biased[id] += bias;
    ev.token = s.sampler->Sample(biased);
  } else {
    ev.token = s.sampler->Sample(row);
  }
  s.sampler->Accept(ev.token);
  if (s.req.logprobs || s.req.top_logprobs > 0) {
    ev.logprob = TokenLogprob(row, ev.token, s.req.top_logprobs, &ev.top_logprobs);
  }
  s.tokens.push_back(ev.token);
  ++s.n_generated;
  if (!s.has_first_token) {
    s.has_first_token = true;
    s.first_token = Clock::now();
  }
  const bool keep = s.req.sink->OnToken(ev);
  if (opts_.is_eog(ev.token) || !keep) {
    Finish(s, FinishReason::kStop);
  } else if (static_cast<int64_t>(s.tokens.size()) >= opts_.n_ctx) {
    // Checked before max_tokens: a request whose max_tokens was defaulted to the room left
    // ends at the context limit, and metrics should say so.
    Finish(s, FinishReason::kContext);
  } else if (s.n_generated >= s.req.max_tokens) {
    Finish(s, FinishReason::kLength);
  }
}

}  // namespace sparrow
