#include "engine/spec/ngram_draft.h"

#include <algorithm>
#include <cstdlib>

namespace sparrow {
namespace {

constexpr int64_t kMaxNgram = 3;
// How many of the answer's last tokens re-align it with a prediction it left.
constexpr int64_t kPredictionAnchor = 4;

std::vector<int32_t> Continuation(std::span<const int32_t> source, int64_t from, int64_t max) {
  const int64_t n = std::min<int64_t>(max, static_cast<int64_t>(source.size()) - from);
  if (n <= 0) return {};
  return {source.begin() + from, source.begin() + from + n};
}

}  // namespace

std::vector<int32_t> PredictionDraft(std::span<const int32_t> generated,
                                     std::span<const int32_t> prediction, int64_t max,
                                     int32_t* next, int64_t* start) {
  const auto n_gen = static_cast<int64_t>(generated.size());
  const auto n_pred = static_cast<int64_t>(prediction.size());
  if (next != nullptr) *next = -1;
  if (start != nullptr) *start = -1;
  if (max <= 0 || n_pred == 0) return {};
  auto from = [&](int64_t at) {
    if (start != nullptr) *start = at;
    std::vector<int32_t> d = Continuation(prediction, at, max);
    const int64_t after = at + static_cast<int64_t>(d.size());
    if (next != nullptr && after < n_pred) *next = prediction[after];
    return d;
  };
  // The answer so far is the prediction's beginning: its next tokens.
  if (n_gen <= n_pred && std::equal(generated.begin(), generated.end(), prediction.begin())) {
    return from(n_gen);
  }
  // The answer left the prediction (an edit): find its last tokens in the prediction, at the
  // occurrence nearest to where the answer is now, and continue from there.
  for (int64_t n = std::min(kPredictionAnchor, n_gen); n >= 1; --n) {
    std::span<const int32_t> tail = generated.subspan(n_gen - n);
    int64_t best = -1;
    for (int64_t end = n; end <= n_pred; ++end) {
      if (!std::equal(tail.begin(), tail.end(), prediction.begin() + (end - n))) continue;
      if (best < 0 || std::llabs(end - n_gen) < std::llabs(best - n_gen)) best = end;
    }
    if (best >= 0 && best < n_pred) return from(best);
  }
  return {};
}

std::vector<int32_t> PromptLookupDraft(std::span<const int32_t> tokens, int64_t max) {
  const auto len = static_cast<int64_t>(tokens.size());
  if (max <= 0) return {};
  for (int64_t n = std::min(kMaxNgram, len - 1); n >= 1; --n) {
    std::span<const int32_t> tail = tokens.subspan(len - n);
    // The latest earlier occurrence, so that the continuation is the freshest text.
    for (int64_t start = len - n - 1; start >= 0; --start) {
      if (std::equal(tail.begin(), tail.end(), tokens.begin() + start)) {
        return Continuation(tokens, start + n, max);
      }
    }
  }
  return {};
}

}  // namespace sparrow
