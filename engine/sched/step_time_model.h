#pragma once
// StepTimeModel: how long a step of continuous batching takes, learnt from the steps run so
// far, and how much prompt (prefill) fits beside the decoding streams so that a step stays
// within a time target. A step carrying a long prefill chunk stalls every running stream for
// its whole length (bench/RESULTS.md, serving: p99 time between tokens); capping the chunk by
// time keeps streams steady while prompts still advance every step.
// Costs are exponential moving averages of milliseconds per decoded token and per prompt token.
// Not thread-safe: the scheduler thread owns it.
#include <cstdint>

namespace sparrow {

class StepTimeModel {
 public:
  // `target_ms` 0: no time cap (only the token budget applies).
  explicit StepTimeModel(double target_ms) : target_ms_(target_ms) {}

  // A step that computed `decode` single-token segments and `prefill` prompt tokens in `ms`.
  void Observe(int64_t decode, int64_t prefill, double ms);

  // The most prompt tokens to put beside `decode` decoding streams, out of `budget` tokens
  // left. The whole budget when nothing decodes (no stream waits), when there is no target,
  // or before the costs are known; never below kMinChunk, so that prompts always advance.
  int64_t PrefillCap(int64_t decode, int64_t budget) const;

  static constexpr int64_t kMinChunk = 16;
  double decode_ms_per_token() const { return decode_ms_; }
  double prefill_ms_per_token() const { return prefill_ms_; }

 private:
  double target_ms_;
  double decode_ms_ = 0;   // 0: not measured yet
  double prefill_ms_ = 0;  // likewise
};

}  // namespace sparrow
