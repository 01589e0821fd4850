#include "engine/sched/step_time_model.h"

#include <algorithm>

namespace sparrow {
namespace {

constexpr double kWeight = 0.2;  // of the newest observation

void Blend(double* ema, double sample) {
  *ema = *ema == 0 ? sample : (1 - kWeight) * *ema + kWeight * sample;
}

}  // namespace

void StepTimeModel::Observe(int64_t decode, int64_t prefill, double ms) {
  if (ms <= 0 || decode + prefill <= 0) return;
  if (prefill == 0) {
    Blend(&decode_ms_, ms / static_cast<double>(decode));
    return;
  }
  // The decode share is taken at the known per-token cost; the rest is the prompt's.
  const double prompt_ms = ms - static_cast<double>(decode) * decode_ms_;
  if (prompt_ms > 0) Blend(&prefill_ms_, prompt_ms / static_cast<double>(prefill));
}

int64_t StepTimeModel::PrefillCap(int64_t decode, int64_t budget) const {
  if (budget <= 0) return 0;
  if (target_ms_ <= 0 || decode == 0 || decode_ms_ == 0 || prefill_ms_ == 0) return budget;
  const double room_ms = target_ms_ - static_cast<double>(decode) * decode_ms_;
  const double fits = room_ms > 0 ? room_ms / prefill_ms_ : 0;
  return std::clamp<int64_t>(static_cast<int64_t>(fits), std::min(kMinChunk, budget), budget);
}

}  // namespace sparrow
