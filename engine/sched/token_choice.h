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

// Speculative decoding's acceptance of a draft token, given the token ChooseToken chose from the
// row that verifies it. Every drafter here proposes deterministically (the draft model's argmax,
// an n-gram, a prediction), so its distribution q is one-hot at `drafted`: the standard rejection
// rule accepts with probability min(1, p(d) / q(d)) = p(d) and otherwise draws from
// max(0, p - q) normalized, that is p without d. Together that is exactly one draw from p, the
// target's distribution after every sampler stage: the token the sampler chose is the answer,
// and the draft is accepted when it is that token. Greedy, p is one-hot at the argmax, so
// greedy answers are the target's own token for token.
bool DraftAccepted(int32_t drafted, int32_t chosen);

}  // namespace sparrow
