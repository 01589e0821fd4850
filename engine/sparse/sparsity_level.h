#pragma once
// SparsityLevel: the levels a threshold policy (CATS, TEAL) may run at while serving, each with
// its per-layer thresholds, and the one in force. The memory plan switches it between two steps
// (issue 15, "Adaptive memory": under pressure the planner may trade sparsity for speed or
// memory); every SparseFfn reads it once per forward pass, so a step never mixes two levels.
// The levels are fixed at construction; only the index moves, atomically, so Set and Current
// may be called from any thread.
#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "engine/common/result.h"
#include "engine/sparse/activation_profile.h"

namespace sparrow {

struct ThresholdLevel {
  double sparsity = 0;            // the share of neurons skipped that was asked for
  std::vector<float> thresholds;  // per layer; empty: dense (the whole-matrix FFN)
  bool dense() const { return thresholds.empty(); }
};

class SparsityLevel {
 public:
  // `levels` ascending by sparsity, not empty; `start` indexes the one in force at first.
  SparsityLevel(std::vector<ThresholdLevel> levels, size_t start);

  // Puts in force the level nearest `sparsity` (the lower one on a tie: less quality lost) and
  // returns its sparsity; a request between or beyond the levels is not an error, the caller
  // logs that it got another level than it asked for.
  double Set(double sparsity);
  // The level in force. The reference stays valid as long as this object.
  const ThresholdLevel& Current() const {
    return levels_[current_.load(std::memory_order_acquire)];
  }
  const std::vector<ThresholdLevel>& levels() const { return levels_; }

 private:
  const std::vector<ThresholdLevel> levels_;
  std::atomic<size_t> current_;
};

// The levels a server started at `start` (> 0) may switch to: dense (when `dense` allows it: a
// model whose FFN is on flash would read every neuron), each profile level below `start`, and
// `start` itself, never above it (the transposed down copy and the quality limit are the start
// level's). Thresholds are resolved as MakeSparsePlan resolves --sparsity, so a switch to a
// level computes what a server started there computes. Profile levels are stored as floats;
// they are rounded to six decimals so that 0.3f is the 0.3 a user types.
Result<std::shared_ptr<SparsityLevel>> MakeSparsityLevel(const ActivationProfile& profile,
                                                         ThresholdMethod method, double start,
                                                         bool dense);

}  // namespace sparrow
