#pragma once
// ChooseToken: the one place a sequence's next token is chosen from its logits row, on the
// engine loop's thread, between a step landing and the planner's Update. Forced tokens first,
// then OpenAI's logit_bias, then the sequence's Sampler; the logprobs reported are the model's
// own. This is the seam of per-sequence token choice: a constrained decoder (grammar, JSON
// schema) masks the row here and advances by the chosen token; speculative decoding's
// acceptance of draft tokens runs here. The planner sees only the chosen ids (TokenChoice).
#include <span>

#include "engine/sched/request.h"
#include "engine/sched/sequence.h"

namespace sparrow {

// The next token of `s` (its sampler accepts it), with logprobs when the request asks.
TokenEvent ChooseToken(Sequence& s, std::span<const float> row);

}  // namespace sparrow
