#pragma once
// The miss curve P_miss(cache bytes) the planner needs (PowerInfer-2's cost model): a trace of
// the neurons each decoded token used, per layer, replayed through the real NeuronCache at
// several sizes. Pure function of its inputs; thread-safe.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace sparrow {

// The active neurons of each (token, layer), stored per layer (a calibration pass visits the
// layers of a batch of tokens one after another).
class NeuronTrace {
 public:
  NeuronTrace(int64_t n_layer, int64_t n_ff);

  // The next token's active neurons in `layer`.
  void Append(int64_t layer, std::span<const int32_t> active);

  int64_t n_layer() const { return n_layer_; }
  int64_t n_ff() const { return n_ff_; }
  // Tokens recorded in every layer.
  int64_t tokens() const;
  int64_t tokens(int64_t layer) const {
    return static_cast<int64_t>(layers_[layer].offsets.size()) - 1;
  }
  std::span<const int32_t> Active(int64_t token, int64_t layer) const;

 private:
  struct Layer {
    std::vector<int32_t> ids;
    std::vector<int64_t> offsets = {0};
  };
  int64_t n_layer_, n_ff_;
  std::vector<Layer> layers_;
};

struct MissCurvePoint {
  double cache_fraction = 0;  // of all bundles
  uint64_t cache_bytes = 0;
  double miss_rate = 0;         // misses per neuron used, after the warm-up tokens
  double misses_per_token = 0;  // bundles read from flash per decoded token
};

// Which policy a replay runs.
enum class ReplayPolicy {
  // The NeuronCache's two-queue LRU over every bundle (what the profile's miss curve stores).
  kTwoQueueLru,
  // LLM in a Flash's sliding window: the neurons of the most recent tokens, as many tokens back
  // as fit (a bundle leaves when it is the least recently used: recency alone, no promotion).
  kWindow,
  // NeuronStore's default: half the bytes a static hot segment (each layer's most frequent
  // neurons over the trace, as a converted file orders them), the other half the two-queue LRU.
  kHotHalfAndLru,
  // Belady's optimum (MIN with bypass): on a miss the cache keeps, of what it holds and the new
  // bundle, those used again soonest. Knows the future: the fewest misses any policy can have on
  // the trace, the bound the others are read against.
  kOptimum,
  // Frequency with decay: each use adds to a bundle's score, scores fade by half every 64
  // tokens; a missed bundle is kept only when its score beats the lowest held (else it is read
  // and dropped), so neurons used once do not push out frequent ones.
  kDecayedLfu,
  // A static hot set over all layers: the capacity's most frequent bundles of the ranking
  // tokens (as kHotHalfAndLru ranks them), whatever their layer; nothing else is kept.
  kGlobalHot,
};

// Replays `trace` under `policy` at each size (a fraction of all n_layer * n_ff bundles of
// `record_bytes`); the first `warmup_tokens` only fill the cache and are not counted.
// `folds` > 1: the trace is cut into that many runs of consecutive tokens, each replayed from an
// empty cache (its own warm-up first), the ranked policies (kHotHalfAndLru, kGlobalHot) ranked
// on all the others, so the curve is that of text the ranking did not see, as a served model's
// is, from a ranking on nearly as much text as the file's own; 1: ranked on the whole trace.
// Curves compare (the optimum bounding the others) at the same folds and warm-up; the optimum
// minimizes a run's misses warm-up included, so on the counted part another policy may come
// within a hair of it.
std::vector<MissCurvePoint> ReplayMissCurve(const NeuronTrace& trace, size_t record_bytes,
                                            std::span<const double> fractions,
                                            int64_t warmup_tokens,
                                            ReplayPolicy policy = ReplayPolicy::kTwoQueueLru,
                                            int folds = 1);

}  // namespace sparrow
