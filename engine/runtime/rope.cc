#include "engine/runtime/rope.h"

#include <cmath>

namespace sparrow {

RopeTable::RopeTable(int64_t n_rot, float freq_base, float freq_scale)
    : n_rot_(n_rot),
      theta_scale_(std::pow(freq_base, -2.0f / static_cast<float>(n_rot))),
      freq_scale_(freq_scale) {}

void RopeTable::Compute(int64_t pos, float* cos_out, float* sin_out) const {
  float theta = static_cast<float>(pos);
  for (int64_t i = 0; i < n_rot_ / 2; ++i) {
    const float t = freq_scale_ * theta;
    cos_out[i] = std::cos(t);
    sin_out[i] = std::sin(t);
    theta *= theta_scale_;
  }
}

void ApplyRope(RopeStyle style, float* x, int64_t n_heads, int64_t head_dim, int64_t n_rot,
               const float* cos_t, const float* sin_t) {
  const int64_t half = n_rot / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    for (int64_t i = 0; i < half; ++i) {
      // Normal style pairs adjacent dims; NeoX pairs dim i with dim i + n_rot/2.
      const int64_t a = style == RopeStyle::kNormal ? 2 * i : i;
      const int64_t b = style == RopeStyle::kNormal ? 2 * i + 1 : i + half;
      const float x0 = v[a], x1 = v[b];
      v[a] = x0 * cos_t[i] - x1 * sin_t[i];
      v[b] = x0 * sin_t[i] + x1 * cos_t[i];
    }
  }
}

}  // namespace sparrow
