#pragma once
// Rotary position embedding, computed as llama.cpp does (float angles built by repeated
// multiplication by base^(-2/n_rot), per-dimension divisors, YaRN's ramp), so positions rotate
// identically.
#include <cstdint>
#include <vector>

#include "engine/model/architecture.h"

namespace sparrow {

struct RopeParams {
  int64_t n_rot = 0;
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;
  std::vector<float> freq_factors;  // n_rot/2 divisors of each pair's angle (rope_freqs); or empty
  float ext_factor = 0.0f;          // YaRN: 0 off
  float attn_factor = 1.0f;         // multiplies cos and sin
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  int64_t n_ctx_orig = 0;  // the context the model was trained with (YaRN's correction dims)
};

// Precomputed cos/sin for one position; thread-compatible.
class RopeTable {
 public:
  explicit RopeTable(RopeParams p);
  RopeTable(int64_t n_rot, float freq_base, float freq_scale);
  // Fills cos_/sin_ for `pos` (n_rot/2 pairs).
  void Compute(int64_t pos, float* cos_out, float* sin_out) const;
  int64_t n_rot() const { return p_.n_rot; }

 private:
  RopeParams p_;
  float theta_scale_;
  float corr_dims_[2] = {0, 0};
};

// Rotates the first n_rot dims of each of `n_heads` heads of size head_dim in `x`.
void ApplyRope(RopeStyle style, float* x, int64_t n_heads, int64_t head_dim, int64_t n_rot,
               const float* cos_t, const float* sin_t);

}  // namespace sparrow
