#pragma once
// What a step planner hands the engine loop (StepPlan: what to run) and what the loop hands back
// (StepOutputs: what ran, with the tokens chosen). Plain data: the planner never sees logits and
// the loop never decides blocks.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/common/status.h"
#include "engine/sched/sequence.h"

namespace sparrow {

// One sequence's part of a step: its tokens [pos, pos + n_tokens) are computed.
struct PlannedSegment {
  Sequence* seq = nullptr;
  int64_t pos = 0;
  int64_t n_tokens = 0;
  // The segment computes the sequence's last known token, so its logits row gives the next token
  // to each of these: the group's followers first (they fork from seq when it lands), then seq.
  // Empty for a chunk in the middle of a prompt.
  std::vector<Sequence*> samplers;
  // Speculative decoding: a decode segment that also carries this many draft tokens
  // (seq->spec.verify: the last token, then the draft), one logits row per token; the loop
  // accepts a prefix of the draft and adds the target's own next token.
  int64_t n_draft = 0;
};

// The step's limits, from the engine loop: the tokens the step's scratch allows, the batches the
// pipeline keeps in flight, and whether a batch may be formed at all (false while a remote device
// is awaited: cancellations and admissions only).
struct StepLimits {
  int64_t token_budget = 0;
  int64_t pipeline_depth = 1;
  bool batch = true;
};

struct StepPlan {
  std::vector<PlannedSegment> segments;  // decoding sequences first, then prefill chunks
  int64_t decoded = 0;                   // single-token decode segments
  int64_t prompt_computed = 0;           // prompt tokens in the prefill chunks
  int64_t drafted = 0;                   // draft tokens the decode segments verify
  // Admitted for the first time by this plan (not after a preemption): their sinks hear of it.
  std::vector<Sequence*> admitted;
  // Ended by this plan (cancelled, or too large for the KV pool), blocks already released.
  std::vector<std::unique_ptr<Sequence>> finished;
};

// The token chosen for one sampler of a segment, or none because its client left meanwhile. A
// verify segment (PlannedSegment::n_draft) has one for each token emitted: the accepted drafts,
// then the target's own.
struct TokenChoice {
  bool cancelled = false;
  int32_t token = 0;
  bool stop = false;  // the sink asked to stop after this token, or the output is complete
  Status failed = Status::Ok();  // no token could be chosen (the constraint refused every one)
};

struct SegmentOutput {
  Status status;                     // this segment alone failed (a flash read)
  std::vector<TokenChoice> choices;  // parallel to PlannedSegment::samplers, when status is ok
};

struct StepOutputs {
  Status status;  // the whole step failed: every sequence in it fails
  // The step's results are void (a remote device failed): its sequences are left as they were.
  bool abandoned = false;
  std::vector<SegmentOutput> segments;  // parallel to StepPlan::segments
  // The step's time when it ran alone (no pipeline): teaches the step time model.
  std::optional<double> step_ms;
};

struct StepUpdate {
  std::vector<std::unique_ptr<Sequence>> finished;           // blocks already released or published
  int64_t generated = 0;                                     // tokens appended
  std::array<int64_t, kDraftSources> drafted{}, accepted{};  // by the verify segments
};

}  // namespace sparrow
