#pragma once
// Sampler: turns a logits row into the next token id. Greedy when temperature <= 0;
// otherwise penalties -> top-k -> top-p -> min-p -> temperature -> seeded draw, the order
// llama.cpp's default chain uses. Same seed and inputs give the same tokens.
// Not thread-safe; one per sequence.
#include <cstdint>
#include <deque>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/common/status.h"

namespace sparrow {

struct SamplingParams {
  float temperature = 0.8f;
  int32_t top_k = 40;             // <= 0: off
  float top_p = 0.95f;            // >= 1: off
  float min_p = 0.05f;            // <= 0: off
  float repeat_penalty = 1.0f;    // 1: off
  float presence_penalty = 0.0f;  // 0: off
  float frequency_penalty = 0.0f;
  int32_t penalty_last_n = 64;  // window of recent tokens the penalties look at
  uint64_t seed = 0xFFFFFFFFu;  // kRandomSeed: seeded from the OS

  static constexpr uint64_t kRandomSeed = 0xFFFFFFFFu;
  // Checks ranges; errors name the parameter and the value.
  Status Validate() const;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);

  // Picks a token from `logits` (n_vocab floats; not modified).
  int32_t Sample(std::span<const float> logits);
  // Records a token of the sequence (prompt or generated) for the penalties.
  void Accept(int32_t token);

  const SamplingParams& params() const { return params_; }

 private:
  struct Candidate {
    int32_t id;
    float logit;
  };
  void ApplyPenalties(std::vector<Candidate>& c) const;

  SamplingParams params_;
  std::mt19937_64 rng_;
  std::deque<int32_t> recent_;
  std::vector<Candidate> cand_;
  std::vector<float> probs_;
};

// The model's log-probability of `token` (log-softmax of the raw `logits`), and with `top` > 0 the
// `top` most likely tokens with theirs, most likely first (ties: the lower id), into *top_out.
float TokenLogprob(std::span<const float> logits, int32_t token, int32_t top,
                   std::vector<std::pair<int32_t, float>>* top_out);

// Index of the largest value; ties go to the lowest index.
int32_t ArgMax(std::span<const float> logits);

}  // namespace sparrow
