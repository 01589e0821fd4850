#pragma once
// ChooseToken: the one place a sequence's next token is chosen from its logits row, on the
// engine loop's thread, between a step landing and the planner's Update. Forced tokens first,
// then OpenAI's logit_bias, then the sequence's Sampler. A request's OutputConstraint (grammar,
// JSON schema) masks the row first and advances by the chosen token; the logprobs reported are
// those of the row it leaves (the model's own without one; logit_bias never shows in them).
// This is the seam of per-sequence token choice: speculative decoding's acceptance of draft
// tokens runs here too. The planner sees only the chosen ids (TokenChoice).
#include <span>

#include "engine/common/result.h"
#include "engine/sched/request.h"
#include "engine/sched/sequence.h"

namespace sparrow {

// The next token of `s` (its sampler and constraint accept it), with logprobs when the request
// asks. An error when the constraint can take no token here (the sequence then fails).
Result<TokenEvent> ChooseToken(Sequence& s, std::span<const float> row);

}  // namespace sparrow
