#include "engine/sched/token_choice.h"

#include <vector>

namespace sparrow {
namespace {

// The row as the request's constraint allows it (refused tokens at -inf), into *out.
Status ConstrainRow(OutputConstraint& c, std::span<const float> row, std::vector<float>* out) {
  out->assign(row.begin(), row.end());
  return c.Mask(*out);
}

// A forced token under a constraint must still be one the language takes.
Status AdvanceConstraint(Sequence& s, int32_t token) {
  if (!s.req.constraint) return Status::Ok();
  return s.req.constraint->Accept(token);
}

}  // namespace

Result<TokenEvent> ChooseToken(Sequence& s, std::span<const float> row) {
  TokenEvent ev;
  std::vector<float> constrained;
  if (s.req.constraint) {
    SPARROW_RETURN_IF_ERROR(ConstrainRow(*s.req.constraint, row, &constrained));
    row = constrained;
  }
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
  SPARROW_RETURN_IF_ERROR(AdvanceConstraint(s, ev.token));
  s.sampler->Accept(ev.token);
  if (s.req.logprobs || s.req.top_logprobs > 0) {
    ev.logprob = TokenLogprob(row, ev.token, s.req.top_logprobs, &ev.top_logprobs);
  }
  return ev;
}

bool DraftAccepted(int32_t drafted, int32_t chosen) {
  return drafted == chosen;
}

}  // namespace sparrow
