#include "engine/memory/memory_budget.h"

#include <algorithm>

namespace sparrow {

std::string WholeMib(uint64_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

MemoryBudget::MemoryBudget(const MemoryConsumers& consumers) : c_(consumers) {
  c_.kv_min_bytes = std::min(c_.kv_min_bytes, c_.kv_max_bytes);
  c_.scratch_min_bytes = std::min(c_.scratch_min_bytes, c_.scratch_bytes);
}

uint64_t MemoryBudget::RoomForElastic(uint64_t room, uint64_t resident,
                                      uint64_t elastic_held) const {
  const uint64_t fixed_held = resident > elastic_held ? resident - elastic_held : 0;
  const uint64_t fixed_unheld = fixed_bytes() > fixed_held ? fixed_bytes() - fixed_held : 0;
  return room > fixed_unheld ? room - fixed_unheld : 0;
}

MemorySplit MemoryBudget::Split(uint64_t elastic) const {
  MemorySplit s;
  s.baseline = c_.baseline_bytes;
  s.weights = c_.weights_bytes;
  uint64_t over_floor = elastic > c_.kv_min_bytes ? elastic - c_.kv_min_bytes : 0;
  s.neuron_cache = std::min(over_floor, c_.cache_max_bytes);
  over_floor -= s.neuron_cache;
  const uint64_t scratch_extra = std::min(over_floor, c_.scratch_bytes - c_.scratch_min_bytes);
  s.scratch = c_.scratch_min_bytes + scratch_extra;
  const uint64_t left = elastic - scratch_extra - s.neuron_cache;
  s.kv_pool = std::clamp(left, c_.kv_min_bytes, c_.kv_max_bytes);
  return s;
}

uint64_t EstimateScratchBytes(const ModelConfig& c, int64_t step_tokens, int64_t n_ctx,
                              int64_t logit_rows) {
  const auto t = static_cast<uint64_t>(std::max<int64_t>(1, step_tokens));
  // Per token: the residual stream and its normed copy, q and the attention output, k and v,
  // the FFN's gate and up rows and its output.
  const auto per_token =
      static_cast<uint64_t>(4 * c.n_embd + 2 * c.q_dim() + 2 * c.kv_dim() + 2 * c.n_ff);
  const auto rows = std::min<uint64_t>(t, static_cast<uint64_t>(std::max<int64_t>(1, logit_rows)));
  // Attention scores of one head over the whole context, per thread at most 2 heads in flight.
  const auto scores = static_cast<uint64_t>(std::max<int64_t>(1, n_ctx) * 2 * c.n_head);
  return sizeof(float) * (t * per_token + rows * static_cast<uint64_t>(c.n_vocab) + scores);
}

}  // namespace sparrow
