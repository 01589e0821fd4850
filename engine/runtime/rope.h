#pragma once
// Rotary position embedding, computed as llama.cpp does (float angles built by repeated
// multiplication by base^(-2/n_rot)), so positions rotate identically.
#include <cstdint>
#include <vector>

#include "engine/model/architecture.h"

namespace sparrow {

// Precomputed cos/sin for one position; thread-compatible.
class RopeTable {
 public:
  RopeTable(int64_t n_rot, float freq_base, float freq_scale);
  // Fills cos_/sin_ for `pos` (n_rot/2 pairs).
  void Compute(int64_t pos, float* cos_out, float* sin_out) const;
  int64_t n_rot() const { return n_rot_; }

 private:
  int64_t n_rot_;
  float theta_scale_;
  float freq_scale_;
};

// Rotates the first n_rot dims of each of `n_heads` heads of size head_dim in `x`.
void ApplyRope(RopeStyle style, float* x, int64_t n_heads, int64_t head_dim, int64_t n_rot,
               const float* cos_t, const float* sin_t);

}  // namespace sparrow
