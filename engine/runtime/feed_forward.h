#pragma once
// FeedForward: the FFN half of every layer, behind one seam, so the forward pass (and with it the
// scheduler and the server) runs a dense or a sparse model alike. One instance per ForwardPass:
// it owns scratch and counters, not thread-safe.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "engine/common/status.h"

namespace sparrow {

// One layer's FFN input for a batch of n tokens.
struct FfnInput {
  const float* residual = nullptr;  // n rows of n_embd: the residual stream before the FFN norm
  const float* normed = nullptr;    // n rows of n_embd: the FFN-normed input
  // n flags, 1 where the token is a sequence's one decoded token of this step (what sparsity is
  // for; prompt tokens may run dense). Null: none is.
  const uint8_t* decode = nullptr;
  int64_t n = 0;
  // n flags the FFN sets to 1 for tokens it could not compute (a failed flash read of a neuron
  // they use); their rows of out are zero, the other tokens' are computed. Null: none is set,
  // and a failure fails the whole call.
  uint8_t* failed = nullptr;
  // n rows of n_embd: the layer's input, before attention, for a router that reads it early
  // (SmallThinker); null elsewhere.
  const float* layer_input = nullptr;
};

// What the FFN computed for decoded tokens: neurons_computed / neurons_total is the active
// fraction of the sparse path.
struct FfnCounters {
  int64_t decode_tokens = 0;
  int64_t neurons_total = 0;     // n_ff per layer per token
  int64_t neurons_computed = 0;  // of those, the ones whose up/down rows were read
};

// Sees the FFN's pre-activations as they are computed (calibration: `sparrow profile`).
class FfnObserver {
 public:
  virtual ~FfnObserver() = default;
  // gate and up hold in.n tokens' pre-activations of layer il, n_ff values per token.
  virtual void OnPreActivations(int64_t il, const FfnInput& in, const float* gate,
                                const float* up) = 0;
};

class FeedForward {
 public:
  virtual ~FeedForward() = default;

  // out[t*n_embd ..] = the FFN of layer `il` for tokens t < in.n. `out` aliases no input.
  // Fails only where weights are read from flash (a converted file under --cache-mb): the
  // first error, naming the file and offset; the tokens it cost are flagged in in.failed.
  virtual Status Compute(int64_t il, const FfnInput& in, float* out) = 0;

  // "dense", or the sparse policy's name.
  virtual std::string_view mode() const = 0;
  virtual FfnCounters counters() const { return {}; }

  // The sparsity level a memory plan switches between two steps: the one nearest `sparsity`
  // that this FFN may run at, which it returns (SparsityLevel::Set). Nullopt: this FFN's level
  // is fixed (dense, the predictor, experts), and so is sparsity().
  virtual std::optional<double> SetSparsity(double sparsity) {
    (void)sparsity;
    return std::nullopt;
  }
  virtual std::optional<double> sparsity() const { return std::nullopt; }

  // The bytes of the buffers it grew for the largest batch so far; ReleaseScratch gives them
  // back (the next batch grows what it needs again).
  virtual uint64_t scratch_bytes() const { return 0; }
  virtual void ReleaseScratch() {}
};

// The bytes `vectors` reserve (their capacity): what scratch_bytes() sums.
template <typename... V>
uint64_t CapacityBytes(const V&... vectors) {
  return (uint64_t{0} + ... + (vectors.capacity() * sizeof(typename V::value_type)));
}

// Gives back what `vectors` reserve.
template <typename... V>
void ReleaseVectors(V&... vectors) {
  ((V().swap(vectors)), ...);
}

}  // namespace sparrow
