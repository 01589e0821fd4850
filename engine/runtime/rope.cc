#include "engine/runtime/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

namespace sparrow {
namespace {

// The dimension at which YaRN's ramp reaches `n_rotations` over the original context (ggml's
// ggml_rope_yarn_corr_dim).
float CorrDim(int64_t n_dims, int64_t n_ctx_orig, float n_rotations, float base) {
  return static_cast<float>(n_dims) *
         std::log(static_cast<float>(n_ctx_orig) / (n_rotations * 2 * std::numbers::pi_v<float>)) /
         (2 * std::log(base));
}

}  // namespace

RopeTable::RopeTable(RopeParams p)
    : p_(std::move(p)), theta_scale_(std::pow(p_.freq_base, -2.0f / static_cast<float>(p_.n_rot))) {
  if (p_.ext_factor != 0.0f) {
    const float start = std::floor(CorrDim(p_.n_rot, p_.n_ctx_orig, p_.beta_fast, p_.freq_base));
    const float end = std::ceil(CorrDim(p_.n_rot, p_.n_ctx_orig, p_.beta_slow, p_.freq_base));
    corr_dims_[0] = std::max(0.0f, start);
    corr_dims_[1] = std::min(static_cast<float>(p_.n_rot - 1), end);
  }
}

RopeTable::RopeTable(int64_t n_rot, float freq_base, float freq_scale)
    : RopeTable([&] {
        RopeParams p;
        p.n_rot = n_rot;
        p.freq_base = freq_base;
        p.freq_scale = freq_scale;
        return p;
      }()) {}

void RopeTable::Compute(int64_t pos, float* cos_out, float* sin_out) const {
  float theta = static_cast<float>(pos);
  for (int64_t i = 0; i < p_.n_rot / 2; ++i) {
    const float extrap = p_.freq_factors.empty() ? theta : theta / p_.freq_factors[i];
    const float interp = p_.freq_scale * extrap;
    float t = interp, mscale = p_.attn_factor;
    if (p_.ext_factor != 0.0f) {
      // YaRN: low-frequency pairs interpolate, high-frequency ones extrapolate, ramped between.
      const float y =
          (static_cast<float>(i) - corr_dims_[0]) / std::max(0.001f, corr_dims_[1] - corr_dims_[0]);
      const float ramp = (1 - std::min(1.0f, std::max(0.0f, y))) * p_.ext_factor;
      t = interp * (1 - ramp) + extrap * ramp;
      mscale *= 1.0f + 0.1f * std::log(1.0f / p_.freq_scale);
    }
    cos_out[i] = std::cos(t) * mscale;
    sin_out[i] = std::sin(t) * mscale;
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
