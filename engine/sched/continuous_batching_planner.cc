#include "engine/sched/continuous_batching_planner.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "engine/common/check.h"
#include "engine/sched/context_shift.h"

namespace sparrow {

using Clock = SchedulerClock;

ContinuousBatchingPlanner::ContinuousBatchingPlanner(KvBlockPool* kv, PlannerOptions options)
    : kv_(kv), opts_(std::move(options)), step_time_(opts_.step_time_target_ms) {
  SPARROW_CHECK(kv_ != nullptr && opts_.is_eog != nullptr);
  SPARROW_CHECK(opts_.n_ctx > 1 && opts_.max_running > 0);
}

ContinuousBatchingPlanner::~ContinuousBatchingPlanner() = default;

int64_t ContinuousBatchingPlanner::running() const {
  return std::count_if(running_.begin(), running_.end(), [](const auto& s) { return !s->done; });
}

void ContinuousBatchingPlanner::CountWaiting() {
  int64_t n = 0;
  for (const auto& s : waiting_) n += 1 + static_cast<int64_t>(s->followers.size());
  waiting_members_ = n;
}

void ContinuousBatchingPlanner::Enqueue(std::unique_ptr<Sequence> seq) {
  waiting_members_ += 1 + static_cast<int64_t>(seq->followers.size());
  waiting_.push_back(std::move(seq));
}

void ContinuousBatchingPlanner::PushFront(std::unique_ptr<Sequence> s) {
  waiting_members_ += 1 + static_cast<int64_t>(s->followers.size());
  waiting_.push_front(std::move(s));
}

void ContinuousBatchingPlanner::Publish(Sequence& s) {
  // An encoder's keys depend on the whole input: no other prompt may reuse them.
  if (opts_.causal) s.kv->PublishFullBlocks(s.tokens, s.n_computed);
}

void ContinuousBatchingPlanner::MarkFinished(Sequence& s, FinishReason reason, Status status) {
  if (s.done) return;
  s.done = true;
  s.finish_reason = reason;
  s.finish_status = std::move(status);
  for (auto it = s.followers.rbegin(); it != s.followers.rend(); ++it) PushFront(std::move(*it));
  s.followers.clear();
  if (s.kv) {
    Publish(s);  // later turns of a chat reuse them
    s.kv->ReleaseAll();
  }
  s.spec.draft_kv.Reset();
}

void ContinuousBatchingPlanner::SweepDone(std::vector<std::unique_ptr<Sequence>>* out) {
  for (auto& s : running_) {
    if (s->done) out->push_back(std::move(s));
  }
  std::erase_if(running_, [](const auto& s) { return s == nullptr; });
}

StepPlan ContinuousBatchingPlanner::Schedule(const StepLimits& limits) {
  StepPlan plan;
  // Drop cancelled sequences first: their blocks go back to the pool before we allocate. One in
  // flight is finished when its step lands (its blocks are in use until then).
  for (auto& s : running_) {
    if (!s->done && !s->in_flight && s->req.sink->Cancelled()) {
      MarkFinished(*s, FinishReason::kCancelled);
    }
  }
  SweepDone(&plan.finished);
  // Waiting requests whose clients left must not hold queue slots until they would have been
  // admitted (new requests would get "queue full" meanwhile).
  std::vector<std::unique_ptr<Sequence>> abandoned;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if ((*it)->req.sink->Cancelled()) {
      abandoned.push_back(std::move(*it));
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  CountWaiting();
  for (auto& s : abandoned) {
    MarkFinished(*s, FinishReason::kCancelled);  // members still wanted requeue
    plan.finished.push_back(std::move(s));
  }
  Admit(&plan);
  if (running_.empty() || !limits.batch) return plan;
  const std::vector<Sequence*> blocked = ReserveDecodeSlots();
  if (running_.empty()) return plan;
  FormBatch(limits, blocked, &plan);
  return plan;
}

void ContinuousBatchingPlanner::Admit(StepPlan* plan) {
  while (static_cast<int64_t>(running_.size()) < opts_.max_running && !waiting_.empty()) {
    // FCFS, but interactive requests go before batch ones.
    auto it = std::find_if(waiting_.begin(), waiting_.end(),
                           [](const auto& s) { return s->req.interactive; });
    if (it == waiting_.end()) it = waiting_.begin();
    // A group is admitted whole, so that its members can fork from the leader.
    const int64_t members = 1 + static_cast<int64_t>((*it)->followers.size());
    if (!running_.empty() && static_cast<int64_t>(running_.size()) + members > opts_.max_running) {
      break;
    }
    std::unique_ptr<Sequence> seq = std::move(*it);
    waiting_.erase(it);
    waiting_members_ -= members;
    if (seq->req.sink->Cancelled()) {
      MarkFinished(*seq, FinishReason::kCancelled);
      plan->finished.push_back(std::move(seq));
      continue;
    }
    seq->kv = std::make_unique<SequenceKv>(kv_);
    const int64_t n = static_cast<int64_t>(seq->tokens.size());
    // At least the last token is computed, so it yields logits. An embedding that pools every
    // row computes them all. (With causal attention its keys and values are a generation's, so
    // publishing them serves later prompts correctly; an encoder's are neither reused nor
    // published.)
    const int64_t cached =
        seq->reuses_prefix() && opts_.causal ? seq->kv->AttachPrefix(seq->tokens, n - 1) : 0;
    if (!seq->kv->Reserve(n)) {
      seq->kv.reset();
      if (running_.empty()) {
        MarkFinished(*seq, FinishReason::kError,
                     ResourceExhausted("the KV cache cannot hold this request's " +
                                       std::to_string(n) + " tokens"));
        plan->finished.push_back(std::move(seq));
        continue;
      }
      // Wait for running sequences to free blocks; keep its place at the front.
      PushFront(std::move(seq));
      break;
    }
    seq->n_computed = cached;
    if (seq->preemptions == 0) {
      seq->cached_prompt = cached;
      seq->admitted = Clock::now();
      plan->admitted.push_back(seq.get());
    }
    running_.push_back(std::move(seq));
  }
}

std::vector<Sequence*> ContinuousBatchingPlanner::ReserveDecodeSlots() {
  // Decoding sequences need one more position each; when the pool is dry, preempt the newest
  // (not one in flight: if only those are left, the sequence waits for their steps to land).
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
  return blocked;
}

void ContinuousBatchingPlanner::FormBatch(const StepLimits& limits,
                                          const std::vector<Sequence*>& blocked, StepPlan* plan) {
  auto ready = [&](const Sequence& s) {
    return !s.in_flight && s.kv && std::find(blocked.begin(), blocked.end(), &s) == blocked.end();
  };
  auto add = [&](Sequence& s, int64_t pos, int64_t len) {
    PlannedSegment seg{&s, pos, len, {}};
    if (pos + len == static_cast<int64_t>(s.tokens.size()) && !s.embedding()) {
      for (const auto& f : s.followers) seg.samplers.push_back(f.get());
      seg.samplers.push_back(&s);
    }
    plan->segments.push_back(std::move(seg));
  };
  // Decode tokens first (they keep streams flowing), then prefill chunks within the budget.
  // In a pipeline each batch takes its share of the decoding sequences, so that the devices
  // have as many batches to work on as there are devices.
  int64_t decoding = 0;
  for (auto& s : running_) decoding += s->n_computed == static_cast<int64_t>(s->tokens.size()) - 1;
  const int64_t depth = std::max<int64_t>(1, limits.pipeline_depth);
  int64_t decode_cap = (decoding + depth - 1) / depth;
  int64_t budget = limits.token_budget;
  std::vector<Sequence*> decode;
  for (auto& s : running_) {
    const int64_t n = static_cast<int64_t>(s->tokens.size());
    if (s->n_computed == n - 1 && ready(*s) && budget > 0 && decode_cap > 0) {
      decode.push_back(s.get());
      --budget;
      --decode_cap;
    }
  }
  // Speculative decoding is off in a pipeline: its batches are in flight while the next is
  // formed, and a draft needs the last token.
  if (opts_.propose && depth == 1) Draft(decode, &budget);
  for (Sequence* s : decode) {
    const auto k = static_cast<int64_t>(s->spec.draft.size());
    add(*s, static_cast<int64_t>(s->tokens.size()) - 1, 1 + k);
    plan->segments.back().n_draft = k;
    plan->drafted += k;
  }
  plan->decoded = static_cast<int64_t>(plan->segments.size());
  budget = step_time_.PrefillCap(plan->decoded, budget);
  for (auto& s : running_) {
    const int64_t n = static_cast<int64_t>(s->tokens.size());
    if (s->n_computed < n - 1 && ready(*s) && budget > 0) {
      int64_t len = std::min(budget, n - s->n_computed);
      if (!opts_.causal && len < n - s->n_computed) {
        // An encoder's input goes whole: alone in a step when it exceeds the budget.
        if (plan->prompt_computed > 0) continue;
        len = n - s->n_computed;
      }
      add(*s, s->n_computed, len);
      budget -= std::min(budget, len);
      plan->prompt_computed += len;
    }
  }
  for (PlannedSegment& seg : plan->segments) seg.seq->in_flight = true;
}

void ContinuousBatchingPlanner::Draft(const std::vector<Sequence*>& decoding, int64_t* budget) {
  std::vector<Sequence*> drafting;
  // The step's spare tokens shared evenly, so that every sequence may draft.
  const int64_t share = decoding.empty() ? 0 : *budget / static_cast<int64_t>(decoding.size());
  for (Sequence* s : decoding) {
    s->spec.draft.clear();
    const auto n = static_cast<int64_t>(s->tokens.size());
    // Room for the drafts and the target's token after them: never past max_tokens or the
    // context, so that no accepted token is ever thrown away. Forced tokens are not drafted.
    const int64_t room = std::min(
        {opts_.draft_max, share, s->req.max_tokens - s->n_generated - 1, opts_.n_ctx - n - 1});
    const bool forced = s->n_generated < static_cast<int64_t>(s->req.forced_tokens.size());
    s->spec.max_draft = forced || !s->followers.empty() ? 0 : std::max<int64_t>(0, room);
    if (s->spec.max_draft > 0 && s->spec.max_draft >= opts_.draft_min) drafting.push_back(s);
  }
  if (drafting.empty()) return;
  opts_.propose(drafting);
  for (Sequence* s : drafting) {
    std::vector<int32_t>& d = s->spec.draft;
    if (static_cast<int64_t>(d.size()) > s->spec.max_draft) d.resize(s->spec.max_draft);
    const auto n = static_cast<int64_t>(s->tokens.size());
    // The draft's positions, the block holding position n - 1 already private (decode slot).
    if (static_cast<int64_t>(d.size()) < std::max<int64_t>(1, opts_.draft_min) ||
        !s->kv->Reserve(n + static_cast<int64_t>(d.size()), n - 1)) {
      d.clear();
      continue;
    }
    *budget -= static_cast<int64_t>(d.size());
    s->spec.verify.assign(1, s->tokens.back());
    s->spec.verify.insert(s->spec.verify.end(), d.begin(), d.end());
  }
}

StepUpdate ContinuousBatchingPlanner::Update(const StepPlan& plan, const StepOutputs& outputs) {
  for (const PlannedSegment& seg : plan.segments) seg.seq->in_flight = false;
  // Draft tokens cost what prompt tokens do: more rows through the same weights.
  if (outputs.step_ms) {
    step_time_.Observe(plan.decoded, plan.prompt_computed + plan.drafted, *outputs.step_ms);
  }
  StepUpdate up;
  if (outputs.abandoned) return up;
  if (!outputs.status.ok()) {
    for (const PlannedSegment& seg : plan.segments) {
      MarkFinished(*seg.seq, FinishReason::kError, outputs.status);
    }
    SweepDone(&up.finished);
    return up;
  }
  SPARROW_CHECK(outputs.segments.size() == plan.segments.size());
  // A failed flash read costs only the sequences that needed it; the others carry on.
  for (size_t i = 0; i < plan.segments.size(); ++i) {
    const Status& st = outputs.segments[i].status;
    if (!st.ok()) MarkFinished(*plan.segments[i].seq, FinishReason::kError, st);
  }
  for (size_t i = 0; i < plan.segments.size(); ++i) {
    Sequence& s = *plan.segments[i].seq;
    if (s.done) continue;
    if (plan.segments[i].n_draft > 0) {
      LandVerified(s, plan.segments[i], outputs.segments[i].choices, &up);
      continue;
    }
    s.n_computed += plan.segments[i].n_tokens;
    s.spec.draft_kv.Keep(s.n_computed);
    const int64_t n = static_cast<int64_t>(s.tokens.size());
    Publish(s);
    if (s.n_computed < n) continue;  // mid-prompt chunk: no token yet
    if (s.embedding()) {
      // Its prompt is its whole work: the engine loop has handed the sink its vector.
      MarkFinished(s, s.req.sink->Cancelled() ? FinishReason::kCancelled : FinishReason::kStop);
      continue;
    }

    const std::vector<TokenChoice>& choices = outputs.segments[i].choices;
    SPARROW_CHECK(choices.size() == s.followers.size() + 1);
    // The group's prompt is computed: each member takes the blocks, the partial last one
    // copy-on-write, and its first token came from the same logits.
    std::vector<std::unique_ptr<Sequence>> forked = std::move(s.followers);
    s.followers.clear();
    for (size_t k = 0; k < forked.size(); ++k) {
      std::unique_ptr<Sequence>& f = forked[k];
      f->kv = std::make_unique<SequenceKv>(kv_);
      f->kv->ForkFrom(*s.kv, s.n_computed);
      f->n_computed = s.n_computed;
      f->cached_prompt = s.n_computed;
      f->admitted = s.admitted;
      if (choices[k].cancelled) {
        MarkFinished(*f, FinishReason::kCancelled);
      } else {
        if (Append(*f, choices[k])) ++up.generated;
      }
      if (f->done) {
        up.finished.push_back(std::move(f));
      } else {
        running_.push_back(std::move(f));
      }
    }
    // A sequence cancelled while its step was in flight ends here.
    if (choices.back().cancelled) {
      MarkFinished(s, FinishReason::kCancelled);
      continue;
    }
    if (Append(s, choices.back())) ++up.generated;
  }
  SweepDone(&up.finished);
  return up;
}

void ContinuousBatchingPlanner::LandVerified(Sequence& s, const PlannedSegment& seg,
                                             const std::vector<TokenChoice>& choices,
                                             StepUpdate* up) {
  SPARROW_CHECK(!choices.empty() && static_cast<int64_t>(choices.size()) <= seg.n_draft + 1);
  const std::vector<int32_t>& draft = s.spec.draft;
  SPARROW_CHECK(static_cast<int64_t>(draft.size()) == seg.n_draft);
  // The tokens emitted: the drafts the target agreed with, then its own (cut short by a stop,
  // an end-of-generation token or a client that left).
  const bool cancelled = choices.back().cancelled;
  const auto emitted = static_cast<int64_t>(choices.size()) - (cancelled ? 1 : 0);
  int64_t accepted = 0;
  while (accepted < emitted && accepted < seg.n_draft &&
         choices[accepted].token == draft[accepted]) {
    ++accepted;
  }
  const auto src = static_cast<size_t>(s.spec.source);
  s.spec.drafted[src] += seg.n_draft;
  s.spec.accepted[src] += accepted;
  up->drafted[src] += seg.n_draft;
  up->accepted[src] += accepted;
  if (s.spec.source == DraftSource::kPrediction && s.spec.prediction_at >= 0) {
    std::vector<bool>& used = s.spec.prediction_used;
    used.resize(s.req.prediction.size(), false);
    int64_t took = accepted;
    if (accepted == seg.n_draft && emitted > accepted &&
        choices[accepted].token == s.spec.prediction_next) {
      ++took;  // the target's own token was the prediction's next
    }
    for (int64_t i = 0; i < took; ++i) {
      const int64_t at = s.spec.prediction_at + i;
      if (at < static_cast<int64_t>(used.size())) used[static_cast<size_t>(at)] = true;
    }
  }
  // Valid keys and values: the last token's and those of the drafts before the last token
  // emitted; the rest held rejected drafts and goes back to the pool.
  s.n_computed += emitted;
  s.kv->Truncate(s.n_computed);
  s.spec.draft_kv.Keep(s.n_computed);
  for (int64_t k = 0; k < emitted && !s.done; ++k) {
    if (Append(s, choices[k])) ++up->generated;
  }
  if (cancelled) MarkFinished(s, FinishReason::kCancelled);
  if (!s.done) Publish(s);
  s.spec.draft.clear();
}

bool ContinuousBatchingPlanner::Append(Sequence& s, const TokenChoice& choice) {
  if (!choice.failed.ok()) {
    MarkFinished(s, FinishReason::kError, choice.failed);
    return false;
  }
  s.tokens.push_back(choice.token);
  ++s.n_generated;
  if (opts_.is_eog(choice.token) || choice.stop) {
    MarkFinished(s, FinishReason::kStop);
  } else if (static_cast<int64_t>(s.tokens.size()) >= opts_.n_ctx &&
             !(opts_.context_shift && s.n_generated < s.req.max_tokens && ShiftContext(s))) {
    // Checked before max_tokens: a request whose max_tokens was defaulted to the room left
    // ends at the context limit, and metrics should say so.
    MarkFinished(s, FinishReason::kContext);
  } else if (s.n_generated >= s.req.max_tokens) {
    MarkFinished(s, FinishReason::kLength);
  }
  return true;
}

bool ContinuousBatchingPlanner::ShiftContext(Sequence& s) {
  const ContextCut cut = PlanContextShift(s.n_computed, s.req.n_keep, opts_.n_ctx);
  if (cut.discard < 1) return false;
  Publish(s);  // the kept head is found again below
  s.kv->ReleaseAll();
  s.tokens.erase(s.tokens.begin() + cut.keep, s.tokens.begin() + cut.keep + cut.discard);
  const int64_t n = static_cast<int64_t>(s.tokens.size());
  s.n_computed = s.kv->AttachPrefix(s.tokens, n - 1);
  if (!s.kv->Reserve(n)) return false;
  ++s.context_shifts;
  return true;
}

Sequence* ContinuousBatchingPlanner::PreemptNewest() {
  auto it =
      std::find_if(running_.rbegin(), running_.rend(), [](const auto& s) { return !s->in_flight; });
  if (it == running_.rend()) return nullptr;
  std::unique_ptr<Sequence> s = std::move(*it);
  running_.erase(std::next(it).base());
  // Its full blocks stay in the prefix cache: the recompute may find them there.
  Publish(*s);
  s->kv->ReleaseAll();
  s->kv.reset();
  s->spec.draft_kv.Reset();
  s->n_computed = 0;
  ++s->preemptions;
  ++preemptions_;
  Sequence* const p = s.get();
  PushFront(std::move(s));
  return p;
}

int64_t ContinuousBatchingPlanner::PreemptAll() {
  int64_t n = 0;
  while (PreemptNewest() != nullptr) ++n;
  return n;
}

std::vector<std::unique_ptr<Sequence>> ContinuousBatchingPlanner::FailRunning(const Status& why) {
  std::vector<std::unique_ptr<Sequence>> out;
  for (auto& s : running_) MarkFinished(*s, FinishReason::kError, why);
  SweepDone(&out);
  return out;
}

std::vector<std::unique_ptr<Sequence>> ContinuousBatchingPlanner::CancelAll() {
  std::vector<std::unique_ptr<Sequence>> out;
  for (auto& s : running_) MarkFinished(*s, FinishReason::kCancelled);
  SweepDone(&out);
  // Cancelling a group leader queues its members, hence the loop.
  while (!waiting_.empty()) {
    std::deque<std::unique_ptr<Sequence>> rest = std::move(waiting_);
    waiting_.clear();
    waiting_members_ = 0;
    for (auto& s : rest) {
      MarkFinished(*s, FinishReason::kCancelled);
      out.push_back(std::move(s));
    }
  }
  return out;
}

Status ContinuousBatchingPlanner::ResizeKv(int64_t blocks, int64_t* preempted) {
  *preempted = 0;
  if (blocks == kv_->n_blocks()) return Status::Ok();
  // The newest sequences give their blocks back first, as when decoding runs the pool dry; the
  // full ones stay in the prefix cache while the smaller pool has room for them.
  while (kv_->used() > blocks && PreemptNewest() != nullptr) ++*preempted;
  std::unordered_map<BlockId, BlockId> moved;
  SPARROW_RETURN_IF_ERROR(kv_->Resize(blocks, &moved));
  for (auto& s : running_) {
    if (s->kv) s->kv->Remap(moved);
  }
  return Status::Ok();
}

}  // namespace sparrow
