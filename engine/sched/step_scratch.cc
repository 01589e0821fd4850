#include "engine/sched/step_scratch.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "engine/memory/memory_budget.h"

namespace sparrow {

StepScratch::StepScratch(ForwardPass* fp, const ModelConfig& config, int64_t max_step_tokens,
                         int64_t n_ctx, int64_t max_rows)
    : fp_(fp),
      config_(config),
      max_step_tokens_(max_step_tokens),
      n_ctx_(n_ctx),
      max_rows_(max_rows),
      cap_tokens_(max_step_tokens) {
  capacity_ = BytesFor(max_step_tokens_);
}

uint64_t StepScratch::BytesFor(int64_t tokens) const {
  return EstimateScratchBytes(config_, tokens, n_ctx_, max_rows_);
}

Status StepScratch::Resize(uint64_t bytes) {
  // The most tokens whose buffers fit (the estimate grows with the tokens), at least the floor.
  int64_t lo = std::min(kTightStepTokens, max_step_tokens_), hi = max_step_tokens_;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (BytesFor(mid) <= bytes) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  cap_tokens_ = lo;
  capacity_ = std::max(bytes, BytesFor(lo));
  // Buffers grown for larger steps than the cap allows now go back (the estimate, not the
  // measured bytes, decides: a few buffers the estimate leaves out would make every plan drop
  // and regrow them).
  if (largest_step_ > cap_tokens_) {
    const uint64_t before = held_bytes();
    fp_->ReleaseScratch();
    // The buffers may grow back to the cap (a tight level then keeps steps within it).
    largest_step_ = cap_tokens_;
    held_ = fp_->scratch_bytes();
    spdlog::info("memory: step scratch given back ({} -> {} KiB); steps of at most {} tokens",
                 before >> 10, held_bytes() >> 10, cap_tokens_);
  }
  return Status::Ok();
}

int64_t StepScratch::StepCap(int64_t budget) const {
  int64_t cap = std::min(budget, cap_tokens_);
  // Short of memory: no step outgrows the buffers the ones before it grew (prompt chunks and
  // recomputed sequences wait or go in smaller pieces).
  if (tight_) cap = std::min(cap, std::max(largest_step_, kTightStepTokens));
  return cap;
}

void StepScratch::Observe(int64_t tokens) {
  largest_step_ = std::max(largest_step_, tokens);
}

void StepScratch::Measure() {
  held_ = fp_->scratch_bytes();
}

}  // namespace sparrow
