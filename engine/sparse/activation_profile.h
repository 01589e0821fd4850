#pragma once
// ActivationProfile: what a calibration text showed of a model's FFN activations (written by
// `sparrow profile`, format in engine/sparse/README.md): per layer, the magnitude thresholds that
// skip a given share of neurons per token, how often each neuron is active at each of them, and
// how concentrated the activations are (the hot set). Immutable after reading; thread-safe.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/common/result.h"
#include "engine/model/model_config.h"

namespace sparrow {

// How a SwiGLU model's neurons are skipped (PowerInfer files use their own predictors).
enum class ThresholdMethod {
  kCats,       // |silu(gate . x)| < t: up and down rows skipped (CATS, arXiv 2404.08763)
  kTealDown,   // |silu(gate . x) * (up . x)| < t: down rows skipped (TEAL on down's input)
  kPredictor,  // the profile's trained predictor chooses: gate, up and down rows skipped
};

// Profile levels are stored as floats (0.05f is 0.0500000007): a sparsity this near a level is
// that level, wherever one is matched to the other.
inline constexpr double kSameSparsity = 1e-6;

struct ActivationProfile {
  std::string model_name;  // general.name of the model it was made from
  int64_t n_layer = 0;
  int64_t n_ff = 0;
  int64_t tokens = 0;         // calibration tokens seen
  std::vector<float> levels;  // target shares of neurons skipped, ascending, in (0, 1)
  // Indexed [level * n_layer + layer].
  std::vector<float> cats_threshold;
  std::vector<float> teal_threshold;
  std::vector<float> hot80;  // share of neurons carrying 80% of activations (CATS threshold)
  // Indexed [(level * n_layer + layer) * n_ff + neuron]: share of tokens on which the neuron is
  // active under that level's CATS threshold.
  std::vector<float> frequency;

  // A trained activation predictor per layer (`sparrow profile --train-predictor`), or none.
  struct LayerPredictor {
    int64_t rank = 0;
    std::vector<float> fc1;   // rank rows of n_embd; reads the FFN-normed input
    std::vector<float> fc2;   // n_ff rows of rank
    std::vector<float> bias;  // n_ff
    float recall = 0, precision = 0, predicted = 0;  // on held-out calibration tokens
  };
  std::vector<LayerPredictor> predictors;  // empty, or one per layer
  int64_t n_embd = 0;                      // with predictors
  float predictor_level = 0;               // the CATS level its labels were taken at

  // The miss curve (optional): the calibration tokens' neurons at CATS level `miss_level`
  // replayed through the neuron cache (miss_curve.h); miss_rate[i] is the share of neurons used
  // that a cache holding miss_fraction[i] of all bundles would read from flash.
  float miss_level = 0;
  std::vector<float> miss_fraction, miss_rate;
  // The same trace under the other policies (miss_curve.h; optional, empty in older profiles):
  // LLM in a Flash's window, and NeuronStore's default of a hot half plus the LRU.
  std::vector<float> miss_rate_window, miss_rate_hot_half;
  // Frequency with decay, the most frequent bundles of every layer held for good, and Belady's
  // optimum: the bound no policy beats on this trace.
  std::vector<float> miss_rate_lfu, miss_rate_global_hot, miss_rate_optimum;

  // Per-layer thresholds skipping `sparsity` of the neurons, interpolated between levels (a
  // sparsity within 1e-6 of a level is that level). Fails outside [levels.front(),
  // levels.back()], naming the range.
  Result<std::vector<float>> Thresholds(ThresholdMethod method, double sparsity) const;
};

// Reads and validates a profile written by WriteActivationProfile (via `sparrow profile`). When
// `model` is given, its layer and FFN sizes must match. Errors name the file and the field.
Result<ActivationProfile> ReadActivationProfile(const std::string& path,
                                                const ModelConfig* model = nullptr);

// The keys and tensor names of the format, shared by the writer (engine/tools) and the reader.
namespace profile_format {
inline constexpr uint32_t kVersion = 1;
inline constexpr const char* kVersionKey = "sparrow.profile.version";
inline constexpr const char* kModelKey = "sparrow.profile.model";
inline constexpr const char* kTokensKey = "sparrow.profile.tokens";
inline constexpr const char* kLevels = "levels";                 // {n_levels}
inline constexpr const char* kCatsThreshold = "cats.threshold";  // {n_layer, n_levels}
inline constexpr const char* kTealThreshold = "teal.threshold";  // {n_layer, n_levels}
inline constexpr const char* kHot80 = "cats.hot80";              // {n_layer, n_levels}
inline constexpr const char* kFrequency = "cats.frequency";      // {n_ff, n_layer, n_levels}
// Optional predictor, per layer N: pred.N.fc1 {n_embd, rank}, pred.N.fc2 {rank, n_ff},
// pred.N.bias {n_ff}; pred.quality {3, n_layer}: recall, precision, share predicted.
inline constexpr const char* kPredictorLevelKey = "sparrow.profile.predictor_level";
inline constexpr const char* kPredictorQuality = "pred.quality";
// Optional miss curve: key sparrow.profile.miss_level, tensors miss.fraction {n} (ascending in
// (0, 1]) and miss.rate {n} (in [0, 1]).
inline constexpr const char* kMissLevelKey = "sparrow.profile.miss_level";
inline constexpr const char* kMissFraction = "miss.fraction";
inline constexpr const char* kMissRate = "miss.rate";
// Optional, each {n} like miss.rate: the window and hot-half policies.
inline constexpr const char* kMissRateWindow = "miss.rate_window";
inline constexpr const char* kMissRateHotHalf = "miss.rate_hot_half";
inline constexpr const char* kMissRateLfu = "miss.rate_lfu";
inline constexpr const char* kMissRateOptimum = "miss.rate_optimum";
inline constexpr const char* kMissRateGlobalHot = "miss.rate_global_hot";
}  // namespace profile_format

}  // namespace sparrow
