#pragma once
// FitContext: the context a server takes when none is configured. The model's training context
// when one request of it fits beside everything else; otherwise the longest context whose KV for
// one request takes at most half of what the device offers beyond the fixed part (weights,
// scratch, the neuron cache as configured, the process's baseline). The other half stays
// elastic: more requests at once, or a larger neuron cache, and room for the budget to shrink
// into under pressure. A long-context model (Llama 3.x: 131072 positions, 8 GiB of f32 KV on the
// 1B shape) would otherwise get a KV floor larger than the device. Pure arithmetic.
#include <cstdint>
#include <string>

namespace sparrow {

struct ContextFitInput {
  int64_t n_ctx_train = 0;          // the model's; 0 when the file does not say
  uint64_t offer_bytes = 0;         // what the device offers the process; 0: unknown
  uint64_t fixed_bytes = 0;         // what the process holds whatever the context
  uint64_t kv_bytes_per_token = 0;  // every layer's K and V for one position
  int64_t granule = 256;            // the context is a multiple of this
};

struct ContextFit {
  int64_t n_ctx = 0;
  // Empty when the training context was taken; else why it was not, with the figures.
  std::string why;
};

ContextFit FitContext(const ContextFitInput& in);

}  // namespace sparrow
