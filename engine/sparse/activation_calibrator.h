#pragma once
// ActivationCalibrator: builds an ActivationProfile from a calibration text, as an FfnObserver on
// a dense forward pass run twice over the same tokens: the first pass fills per-layer magnitude
// histograms (where the thresholds go), the second counts each neuron's activity under them.
// Not thread-safe (it observes one ForwardPass).
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/model/model_config.h"
#include "engine/runtime/feed_forward.h"
#include "engine/sparse/activation_profile.h"
#include "engine/sparse/miss_curve.h"

namespace sparrow {

// Counts of non-negative values on a logarithmic grid (128 steps per octave, 2^-40 .. 2^24, plus
// zero): quantiles within about 0.5% of the value. Trained models' activations crowd into narrow
// ranges, where 32 steps put the share skipped 4 points off the level asked for.
class MagnitudeHistogram {
 public:
  MagnitudeHistogram();
  void Add(float magnitude);
  int64_t count() const { return total_; }
  // The smallest value v with about a share q of the values below it (q in [0, 1]).
  float Quantile(double q) const;

 private:
  std::vector<int64_t> bins_;
  int64_t total_ = 0;
};

class ActivationCalibrator : public FfnObserver {
 public:
  // `levels`: the shares of neurons to skip that the profile gets thresholds for (ascending).
  ActivationCalibrator(const ModelConfig& config, std::vector<float> levels);

  void OnPreActivations(int64_t il, const FfnInput& in, const float* gate,
                        const float* up) override;

  // In the second pass, also keep up to `max_samples` tokens per layer as predictor training
  // data: the FFN-normed input (what the gate sees: a predictor on the un-normed residual, as
  // PowerInfer's, has to learn each token's scale too and recalls far less on SwiGLU models)
  // and which neurons pass level `level`'s CATS threshold.
  void CollectSamples(size_t level, int64_t max_samples);
  struct Samples {
    int64_t n = 0;
    std::vector<float> x;        // n rows of n_embd: the FFN-normed input
    std::vector<uint8_t> label;  // n rows of n_ff
  };
  const Samples& samples(int64_t il) const { return samples_[il]; }
  size_t sample_level() const { return sample_level_; }

  // In the second pass, also record the neurons active at level `level` for up to `max_tokens`
  // tokens per layer (the miss curve's trace).
  void TraceLevel(size_t level, int64_t max_tokens);
  const NeuronTrace* trace() const { return trace_.get(); }
  size_t trace_level() const { return trace_level_; }

  // Ends the first pass: places the thresholds. The next pass over the same text counts.
  void EndFirstPass();
  bool counting() const { return counting_; }
  int64_t tokens() const { return tokens_; }
  // The profile, after the second pass.
  ActivationProfile Result() const;

 private:
  const ModelConfig& c_;
  std::vector<float> levels_;
  bool counting_ = false;
  int64_t tokens_ = 0;                                  // first pass, layer 0
  std::vector<MagnitudeHistogram> cats_;                // per layer: |silu(gate)|
  std::vector<MagnitudeHistogram> teal_;                // per layer: |silu(gate) * up|
  std::vector<float> cats_threshold_, teal_threshold_;  // [level * n_layer + layer]
  // [(layer * n_ff + neuron) * (n_levels + 1) + b]: tokens whose |silu(gate)| passed exactly b
  // of the layer's thresholds.
  std::vector<int64_t> passed_;
  std::vector<int64_t> counted_tokens_;  // per layer, second pass
  std::vector<float> act_;
  size_t sample_level_ = 0;
  int64_t max_samples_ = 0;
  std::vector<Samples> samples_;
  std::unique_ptr<NeuronTrace> trace_;
  size_t trace_level_ = 0;
  int64_t trace_tokens_ = 0;
  std::vector<int32_t> trace_ids_;
};

}  // namespace sparrow
