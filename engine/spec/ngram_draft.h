#pragma once
// Drafts without a second model: the text a sequence is likely to repeat. A request's predicted
// output (OpenAI's `prediction`) is followed where the answer so far agrees with it, or picks up
// again after the answer's last few tokens; otherwise prompt lookup (PLD): the tokens that
// followed the latest earlier occurrence of the sequence's last n-gram (n from 3 down to 1).
// Pure functions, no state: each step drafts from the tokens as they are.
#include <cstdint>
#include <span>
#include <vector>

namespace sparrow {

// Up to `max` tokens to follow `prediction` given the answer so far (`generated`); empty when the
// answer's last tokens are nowhere in it. With `next`, the prediction's token after the draft
// (-1 at its end); with `start`, the draft's position in the prediction.
std::vector<int32_t> PredictionDraft(std::span<const int32_t> generated,
                                     std::span<const int32_t> prediction, int64_t max,
                                     int32_t* next = nullptr, int64_t* start = nullptr);

// Up to `max` tokens that followed the latest earlier occurrence of the last n tokens of
// `tokens` (the prompt and the answer so far), for the longest n of 3, 2, 1 that occurs.
std::vector<int32_t> PromptLookupDraft(std::span<const int32_t> tokens, int64_t max);

}  // namespace sparrow
