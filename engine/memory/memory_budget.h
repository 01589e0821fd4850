#pragma once
// MemoryBudget: one budget for the whole process, split among the consumers that hold memory.
// The process's own baseline and resident weights are fixed by the model; the step's scratch
// down to the buffers of a small step, the KV pool down to one full context, and the neuron
// cache are elastic, and the budget controller (BudgetPolicy) moves only their part. When it
// shrinks, the KV pool gives way first, down to one full context: its blocks beyond the ones in
// use cost nothing to drop, and the ones in use only cost a recompute of the sequences
// preempted. Then the scratch: smaller steps only cost prompts speed. Then the neuron cache:
// every byte it loses is read from flash again at each token. Below the floors the budget is
// starved. The planner (engine/plan) may choose another
// split at the same total. Immutable; thread-safe.
#include <cstdint>
#include <string>

#include "engine/model/model_config.h"

namespace sparrow {

struct MemoryConsumers {
  uint64_t baseline_bytes = 0;  // the process itself (ProcessAnonBytes at load: runtime, vocab)
  uint64_t weights_bytes = 0;   // resident weights (the FFN's rows excluded when on flash)
  uint64_t scratch_bytes = 0;   // the step's buffers (EstimateScratchBytes)
  // The step's buffers under pressure (steps of a few tokens); above scratch_bytes: the scratch
  // is fixed at scratch_bytes.
  uint64_t scratch_min_bytes = UINT64_MAX;
  uint64_t kv_min_bytes = 0;     // one full context
  uint64_t kv_max_bytes = 0;     // the pool as configured
  uint64_t cache_max_bytes = 0;  // the neuron cache as configured; 0 with the FFN in memory
};

struct MemorySplit {
  uint64_t baseline = 0, weights = 0, scratch = 0, kv_pool = 0, neuron_cache = 0;
  uint64_t total() const { return baseline + weights + scratch + kv_pool + neuron_cache; }
};

class MemoryBudget {
 public:
  explicit MemoryBudget(const MemoryConsumers& consumers);

  const MemoryConsumers& consumers() const { return c_; }
  uint64_t fixed_bytes() const {
    return c_.baseline_bytes + c_.weights_bytes + c_.scratch_min_bytes;
  }
  // The elastic part's bounds, what BudgetPolicy works in.
  uint64_t elastic_ceiling() const {
    return c_.kv_max_bytes + c_.cache_max_bytes + (c_.scratch_bytes - c_.scratch_min_bytes);
  }
  uint64_t elastic_floor() const { return c_.kv_min_bytes; }
  uint64_t ceiling() const { return fixed_bytes() + elastic_ceiling(); }
  uint64_t floor() const { return fixed_bytes() + elastic_floor(); }

  // How `elastic` bytes (a BudgetPolicy target) split: over the KV pool's floor the neuron cache
  // takes up to its size, then the scratch what brings it to its size; the KV pool takes the
  // rest, up to its size.
  MemorySplit Split(uint64_t elastic) const;
  // The elastic bytes a budget for the whole process leaves (0 when the fixed part alone is more).
  uint64_t ElasticFor(uint64_t total) const {
    return total > fixed_bytes() ? total - fixed_bytes() : 0;
  }
  // What a source's `room` leaves the elastic part once the fixed part the process does not yet
  // hold is set aside: mapped weights not yet read and scratch not yet grown are taken without
  // asking, as surely as the elastic consumers fill what they were granted. `resident`: the
  // process's resident bytes; `elastic_held`: the part of them the KV pool and cache hold.
  uint64_t RoomForElastic(uint64_t room, uint64_t resident, uint64_t elastic_held) const;

 private:
  MemoryConsumers c_;
};

// "123 MiB" (whole MiB, rounded down): the budget's log lines and messages.
std::string WholeMib(uint64_t bytes);

// The most a step's buffers take for `step_tokens` tokens at a context of `n_ctx`: the forward
// pass's activations, the FFN's intermediate rows, attention scores and a row of logits for each
// sequence the step samples (at most `logit_rows`). An estimate of what the grow-only buffers
// reach; it leaves out allocator overhead. StepScratch holds the measured figure.
uint64_t EstimateScratchBytes(const ModelConfig& config, int64_t step_tokens, int64_t n_ctx,
                              int64_t logit_rows);

}  // namespace sparrow
