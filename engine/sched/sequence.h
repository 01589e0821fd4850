#pragma once
// Sequence: one request's state while it is queued or runs. The step planner decides its tokens,
// positions and KV blocks; the engine loop chooses its next token (the sampler) and tells its
// sink. Not thread-safe: the scheduler thread owns it once it is queued.
#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include "engine/kv/sequence_kv.h"
#include "engine/runtime/embedding_pooler.h"
#include "engine/runtime/sampler.h"
#include "engine/sched/request.h"
#include "engine/spec/spec_state.h"

namespace sparrow {

using SchedulerClock = std::chrono::steady_clock;

inline double MsBetween(SchedulerClock::time_point a, SchedulerClock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

struct Sequence {
  GenerationRequest req;
  std::vector<int32_t> tokens;  // prompt then generated tokens; recomputed after preemption
  int64_t n_prompt = 0;
  int64_t n_computed = 0;  // positions whose keys/values are in the cache
  int64_t n_generated = 0;
  int64_t cached_prompt = 0;
  int64_t preemptions = 0;
  int64_t context_shifts = 0;  // times the context was full and its middle dropped
  std::unique_ptr<SequenceKv> kv;
  // The engine loop's token choice (token_choice.h); the planner never reads it (null in its
  // tests).
  std::unique_ptr<Sampler> sampler;
  SpecState spec;  // speculative decoding (the planner sets the draft's room, the loop drafts)
  // An embedding request's rows as its chunks land (the engine loop's; null for a generation).
  std::unique_ptr<EmbeddingPooler> pooler;
  SchedulerClock::time_point submitted, admitted, first_token;
  bool has_first_token = false;
  bool done = false;
  bool in_flight = false;  // in a step the forward pass has not landed yet
  // Set when done: why, and the error for kError.
  FinishReason finish_reason = FinishReason::kStop;
  Status finish_status;
  // Other members of this sequence's group (same prompt): they fork from it once its prompt
  // is computed.
  std::vector<std::unique_ptr<Sequence>> followers;

  bool embedding() const { return req.embedding.has_value(); }
  // Whether cached prefix blocks may stand in for computing the prompt's first tokens: always
  // for a generation (only the last row's logits are read); for an embedding only when it pools
  // the last row alone (last, and rank by the last token).
  bool reuses_prefix() const { return pooler == nullptr || !pooler->wants_every_row(); }
};

// A queued sequence for `request` (its prompt as its tokens, submitted `now`), without a sampler.
inline std::unique_ptr<Sequence> NewSequence(GenerationRequest request,
                                             SchedulerClock::time_point now) {
  auto seq = std::make_unique<Sequence>();
  seq->tokens = request.prompt;
  seq->n_prompt = static_cast<int64_t>(request.prompt.size());
  seq->req = std::move(request);
  seq->submitted = now;
  return seq;
}

}  // namespace sparrow
