#pragma once
// The sparse half of `sparrow mkmodel --format pwri`: PowerInfer-format synthetic models whose
// predictor chooses a controlled share of neurons per token, each neuron with its own activation
// frequency (all equal, or a power law: PowerInfer measured 17-26% of neurons carrying 80% of
// the activations of real ReLU models). Random weights cannot have a trained predictor, so the
// predictor is built to compute a known function of the residual (the construction of
// ../shared/pwri/README.md, with an offset per neuron):
//   fc1 = [P; -P]  (2m rows),  fc2_i = [w_i + c_i, -w_i + c_i],
//   logit_i = w_i . (P x) + c_i * sum_j |P_j x|,
// where w_i picks a few rows of the first 32 of P. The gate row is w_i . P plus noise, so the
// predicted neurons are mostly the ones whose ReLU gate fires, and the offset c_i moves the
// share of tokens for which neuron i is predicted active to its frequency f_i (for a residual
// whose projections on P's rows are alike: the measured active share is printed by
// `sparrow bench`). Pure functions of the seed; thread-safe.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/result.h"

namespace sparrow::tools {

// How often each neuron is active: every neuron alike (power 0), or f_i proportional to
// (rank_i + 1)^-power over a random ranking of the neurons, scaled to the asked mean.
struct HotProfile {
  double power = 0.0;
};
// "uniform" or "powerlaw:A" with A > 0.
Result<HotProfile> ParseHotProfile(std::string_view text);

struct PwriLayout {
  int64_t n_embd = 0;
  int64_t n_ff = 0;
  int64_t rank = 0;  // predictor rank r = 2m (rows of fc1, row length of fc2)
  double active = 0.5;
  HotProfile hot;
};

// Checks the rank (a multiple of 32, at least 128: the first 32-element block of each half of
// fc2 carries no offset, so quantized blocks stay exact) and the active share.
Status CheckPwriLayout(const PwriLayout& layout);

// One layer's coupled tensors, generated row by row.
class PwriLayer {
 public:
  PwriLayer(const PwriLayout& layout, uint64_t seed);

  void GateRow(int64_t neuron, float* out) const;  // n_embd values
  void Fc1Row(int64_t j, float* out) const;        // j < rank; n_embd values
  void Fc2Row(int64_t neuron, float* out) const;   // rank values
  const std::vector<float>& frequencies() const { return freq_; }

 private:
  static constexpr int kPicks = 4;  // rows of P in each neuron's w
  void Picks(int64_t neuron, int idx[kPicks], float w[kPicks]) const;

  PwriLayout layout_;
  uint64_t seed_;
  std::vector<float> p_;       // m x n_embd
  std::vector<float> freq_;    // per neuron
  std::vector<float> offset_;  // c_i per neuron
};

// The share of neurons that carries `share` of all activations under these frequencies.
double HotSetShare(const std::vector<float>& freq, double share);

}  // namespace sparrow::tools
