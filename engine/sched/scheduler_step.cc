// The Scheduler's step: asking the planner for a batch, submitting it to the forward pass,
// landing it (choosing the tokens, streaming them, telling the planner what ran).
#include <spdlog/spdlog.h>

#include <algorithm>

#include "engine/sched/scheduler.h"
#include "engine/sched/token_choice.h"

namespace sparrow {

using Clock = SchedulerClock;

void Scheduler::Report(StepPlan* plan) {
  for (Sequence* s : plan->admitted) s->req.sink->OnAdmitted();
  Finish(std::move(plan->finished));
  plan->finished.clear();
}

void Scheduler::Step() {
  // A remote device that is awaited holds the batches back; cancellations and admissions go on.
  const bool hold = planner_->has_work() && HoldForRemote();
  StepPlan plan = planner_->Schedule(
      {scratch_->StepCap(opts_.step_token_budget), PipelineDepth(), /*batch=*/!hold});
  Report(&plan);
  {
    // A request leaves `waiting` here; without this it would show in neither gauge until the
    // step ends, and an observer could take the server for idle.
    std::lock_guard<std::mutex> lock(mu_);
    CountLocked();
  }
  if (hold) return;
  const bool submitting = !plan.segments.empty();
  if (submitting) {
    Flight fl;
    for (const PlannedSegment& seg : plan.segments) {
      // A verify segment reads the last token and the draft, a row of logits for each; an
      // embedding's segment gives hidden rows instead of logits.
      const std::span<const int32_t> tokens =
          seg.n_draft > 0 ? std::span<const int32_t>(seg.seq->spec.verify)
                          : std::span<const int32_t>(&seg.seq->tokens[seg.pos],
                                                     static_cast<size_t>(seg.n_tokens));
      const EmbeddingPooler* pooler = seg.seq->pooler.get();
      fl.segs.push_back(
          {seg.seq->kv.get(), tokens, seg.pos,
           /*all_logits=*/seg.n_draft > 0 || (pooler != nullptr && pooler->wants_every_row()),
           /*hidden=*/pooler != nullptr});
    }
    scratch_->Observe(plan.decoded + plan.drafted + plan.prompt_computed);
    fl.start = Clock::now();
    mask_prefetch_.Start(plan);
    if (Status st = fp_.Submit(fl.segs); !st.ok()) {
      spdlog::error("forward pass failed: {}", st.ToString());
      StepOutputs failed;
      failed.status = st;
      Finish(planner_->Update(plan, failed).finished);
      return;
    }
    fl.plan = std::move(plan);
    flights_.push_back(std::move(fl));
  }
  if (flights_.empty()) return;
  // Land the oldest batch once the pipeline is full, or when nothing more can be sent.
  if (static_cast<int64_t>(flights_.size()) >= PipelineDepth() || !submitting) LandOldest();
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
  mask_prefetch_.Wait();  // the constraints are the token choice's again
  std::vector<float> logits, hidden;
  std::vector<Status> failures;
  Status st = fp_.Collect(&logits, &failures, &hidden);
  StepOutputs out;
  // Alone in the pipeline, the time from submit to landing is the step's.
  if (PipelineDepth() == 1) out.step_ms = MsBetween(fl.start, Clock::now());
  if (!st.ok()) {
    spdlog::error("forward pass failed: {}", st.ToString());
    out.status = st;
    Finish(planner_->Update(fl.plan, out).finished);
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
    out.abandoned = true;
    planner_->Update(fl.plan, out);
    while (!flights_.empty()) {
      Flight rest = std::move(flights_.front());
      flights_.pop_front();
      std::vector<float> ignored;
      (void)fp_.Collect(&ignored, nullptr);
      StepOutputs void_step;
      void_step.abandoned = true;
      planner_->Update(rest.plan, void_step);
    }
    if (RemoteWaitLeft()) {
      const int64_t waiting = planner_->PreemptAll();
      spdlog::warn("{}: {} running sequences wait for the device or a new placement",
                   why.ToString(), waiting);
    } else {
      Finish(planner_->FailRunning(why));
    }
    kv_.DropCached();
    return;
  }
  remote_down_since_.reset();
  // A failed flash read costs only the sequences that needed it; their KV goes back to the pool
  // and the others carry on.
  const int64_t n_vocab = model_.config().n_vocab, n_embd = model_.config().n_embd;
  out.segments.resize(fl.plan.segments.size());
  // The logits rows are the generations' segments' (one each, a verify segment one per token);
  // the hidden rows the embeddings'.
  int64_t logits_row = 0, hidden_row = 0;
  for (size_t i = 0; i < fl.plan.segments.size(); ++i) {
    const PlannedSegment& seg = fl.plan.segments[i];
    SegmentOutput& so = out.segments[i];
    so.status = failures[i];
    const ForwardPass::Segment& fs = fl.segs[i];
    const int64_t rows = fs.all_logits ? seg.n_tokens : 1;
    const int64_t first_row = fs.hidden ? hidden_row : logits_row;
    (fs.hidden ? hidden_row : logits_row) += rows;
    if (!so.status.ok()) {
      spdlog::error("a request failed in the forward pass: {}", so.status.ToString());
      continue;
    }
    if (fs.hidden) {
      LandEmbeddingRows(*seg.seq, seg.pos, seg.n_tokens,
                        {&hidden[first_row * n_embd], static_cast<size_t>(rows * n_embd)});
      continue;
    }
    if (seg.n_draft > 0) {
      so.choices = EmitVerified(*seg.seq, &logits[first_row * n_vocab]);
      continue;
    }
    std::span<const float> row(&logits[first_row * n_vocab], n_vocab);
    for (Sequence* s : seg.samplers) so.choices.push_back(EmitToken(*s, row));
  }
  StepUpdate up = planner_->Update(fl.plan, out);
  Finish(std::move(up.finished));
  std::lock_guard<std::mutex> lock(mu_);
  for (int k = 0; k < kDraftSources; ++k) {
    stats_.spec_drafted[k] += up.drafted[k];
    stats_.spec_accepted[k] += up.accepted[k];
  }
  stats_.generated_tokens += up.generated;
  stats_.prompt_tokens += fl.plan.prompt_computed;
  ++stats_.steps;
  stats_.ffn = fp_.ffn().counters();
}

void Scheduler::LandEmbeddingRows(Sequence& s, int64_t pos, int64_t n,
                                  std::span<const float> rows) {
  s.pooler->Add(pos, n, rows);
  // The prompt's last chunk: the embedding is complete (the planner then finishes the request).
  if (pos + n == s.n_prompt && !s.req.sink->Cancelled())
    s.req.sink->OnEmbedding(s.pooler->Finish());
}

TokenChoice Scheduler::EmitToken(Sequence& s, std::span<const float> row) {
  // A sequence cancelled while its batch was in flight ends without a token.
  if (s.req.sink->Cancelled()) return {.cancelled = true};
  Result<TokenEvent> ev = ChooseToken(s, row);
  if (!ev.ok()) return {.failed = ev.status()};
  if (!s.has_first_token) {
    s.has_first_token = true;
    s.first_token = Clock::now();
  }
  const bool keep = s.req.sink->OnToken(*ev);
  // A constrained output that is whole ends here, without waiting for the model's end token.
  const bool complete = s.req.constraint && s.req.constraint->Complete();
  return {.token = ev->token, .stop = !keep || complete};
}

std::vector<TokenChoice> Scheduler::EmitVerified(Sequence& s, const float* rows) {
  const auto n_vocab = static_cast<size_t>(model_.config().n_vocab);
  const std::vector<int32_t>& draft = s.spec.draft;
  std::vector<TokenChoice> out;
  for (size_t i = 0; i <= draft.size(); ++i) {
    const TokenChoice c = EmitToken(s, {rows + i * n_vocab, n_vocab});
    out.push_back(c);
    if (c.cancelled || c.stop || opts_.is_eog(c.token) || i == draft.size() ||
        !DraftAccepted(draft[i], c.token)) {
      break;
    }
  }
  return out;
}

void Scheduler::Finish(std::vector<std::unique_ptr<Sequence>> done) {
  if (done.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& s : done) {
      if (s->finish_reason == FinishReason::kCancelled)
        ++stats_.requests_cancelled;
      else if (s->finish_reason == FinishReason::kError)
        ++stats_.requests_failed;
      else
        ++stats_.requests_finished;
    }
    // Whoever hears of the finish sees the blocks already returned, and these sequences no
    // longer running: a client that sends its next request on hearing the answer must not find
    // them still counted (admission at the floor).
    CountLocked();
  }
  const auto now = Clock::now();
  for (const auto& s : done) {
    FinishInfo info;
    info.reason = s->finish_reason;
    info.status = s->finish_status;
    info.prompt_tokens = s->n_prompt;
    info.cached_prompt_tokens = s->cached_prompt;
    info.completion_tokens = s->n_generated;
    info.queue_ms = s->admitted.time_since_epoch().count() ? MsBetween(s->submitted, s->admitted)
                                                           : MsBetween(s->submitted, now);
    info.ttft_ms = s->has_first_token ? MsBetween(s->submitted, s->first_token) : 0;
    info.total_ms = MsBetween(s->submitted, now);
    info.preemptions = s->preemptions;
    const SpecState& sp = s->spec;
    for (int k = 0; k < kDraftSources; ++k) {
      info.draft_tokens += sp.drafted[k];
      info.accepted_draft_tokens += sp.accepted[k];
    }
    if (!s->req.prediction.empty()) {
      // The prediction's tokens the answer took (SpecState::prediction_used), and a first token
      // that was its first (computed with the prompt, before any draft).
      const bool first = s->n_generated > 0 && s->tokens[s->n_prompt] == s->req.prediction[0];
      int64_t hit = std::count(sp.prediction_used.begin(), sp.prediction_used.end(), true);
      if (first && (sp.prediction_used.empty() || !sp.prediction_used[0])) ++hit;
      info.accepted_prediction_tokens = hit;
      info.rejected_prediction_tokens = static_cast<int64_t>(s->req.prediction.size()) - hit;
    }
    info.context_shifts = s->context_shifts;
    if (s->context_shifts > 0) {
      spdlog::info(
          "context shift: a request of {} prompt tokens (keeping {}) shifted {} times "
          "over {} tokens",
          s->n_prompt, s->req.n_keep, s->context_shifts, s->n_generated);
    }
    s->req.sink->OnFinish(info);
  }
}

}  // namespace sparrow
