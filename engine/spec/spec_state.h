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
  // With a prediction: its token after the draft (-1: none), and how often the target's own
  // token after a wholly accepted draft was that one (OpenAI counts those as accepted too).
  int32_t prediction_next = -1;
  int64_t prediction_matched = 0;
  DraftKv draft_kv;  // with a draft model
  std::array<int64_t, kDraftSources> drafted{}, accepted{};
};

}  // namespace sparrow
