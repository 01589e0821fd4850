#pragma once
// StepScratch: the step's buffers as a MemoryUser (kScratch). The forward pass and its FFN grow
// their buffers to the largest step they computed and keep them; a budget for them caps the
// tokens a step may take (as many as EstimateScratchBytes says fit, never under a small floor),
// and a budget under what they hold gives them back at once (the next steps grow what the cap
// allows). Under a tight level no step outgrows the largest one before it either.
// The scheduler's thread calls everything but held_bytes and capacity_bytes (any thread).
#include <atomic>
#include <cstdint>

#include "engine/memory/memory_user.h"
#include "engine/model/model_config.h"
#include "engine/runtime/forward_pass.h"

namespace sparrow {

// Under pressure a step may still take this many tokens, whatever its budget or the largest step
// before it (a server that has only decoded would otherwise recompute a preempted sequence a
// token or two per step).
inline constexpr int64_t kTightStepTokens = 32;

class StepScratch final : public MemoryUser {
 public:
  // `fp` must outlive this object. A step takes at most `max_step_tokens` tokens and samples at
  // most `max_rows` sequences; attention spans at most `n_ctx` positions.
  StepScratch(ForwardPass* fp, const ModelConfig& config, int64_t max_step_tokens, int64_t n_ctx,
              int64_t max_rows);

  MemoryUserKind kind() const override { return MemoryUserKind::kScratch; }
  uint64_t held_bytes() const override { return held_.load(std::memory_order_relaxed); }
  uint64_t capacity_bytes() const override { return capacity_.load(std::memory_order_relaxed); }
  Status Resize(uint64_t bytes) override;
  void ApplyLevel(bool tight) override { tight_ = tight; }

  // The tokens the next step may take of `budget`.
  int64_t StepCap(int64_t budget) const;
  // A step of `tokens` was submitted.
  void Observe(int64_t tokens);
  // Counts what the buffers hold now (nothing in flight).
  void Measure();
  bool tight() const { return tight_; }

 private:
  uint64_t BytesFor(int64_t tokens) const;

  ForwardPass* fp_;
  const ModelConfig& config_;
  const int64_t max_step_tokens_, n_ctx_, max_rows_;
  int64_t cap_tokens_;
  int64_t largest_step_ = 0;
  bool tight_ = false;
  std::atomic<uint64_t> held_{0}, capacity_{0};
};

}  // namespace sparrow
