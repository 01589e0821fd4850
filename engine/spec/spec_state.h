#pragma once
// One sequence's speculative decoding state: the draft of the step in flight, the draft model's
// KV of it, and what was drafted and accepted (per sequence for usage, per source for metrics).
#include <array>
#include <cstdint>
#include <vector>

#include "engine/spec/model_drafter.h"

namespace sparrow {

enum class DraftSource { kModel, kNgram, kPrediction };
inline constexpr int kDraftSources = 3;
const char* DraftSourceName(DraftSource source);

struct SpecState {
  int64_t max_draft = 0;       // what the planner allows this step (0: no draft)
  std::vector<int32_t> draft;  // proposed for this step
  DraftSource source = DraftSource::kModel;
  // The verify segment's tokens: the sequence's last token, then the draft (the forward pass
  // reads them until the step lands).
  std::vector<int32_t> verify;
  // With a prediction: the draft's position in it and its token after the draft (-1: none);
  // and which of its tokens the answer took (accepted drafts, and the target's own token after
  // a wholly accepted draft when it was the prediction's next). A position counts once: the
  // answer may re-align with a prediction it left, even at a part it used already, so OpenAI's
  // accepted_prediction_tokens is the positions used, never more than the prediction's length.
  int64_t prediction_at = -1;
  int32_t prediction_next = -1;
  std::vector<bool> prediction_used;
  DraftKv draft_kv;  // with a draft model
  std::array<int64_t, kDraftSources> drafted{}, accepted{};
};

}  // namespace sparrow
