#pragma once
// The deterministic random streams of synthetic models: SplitMix64, one stream per row, so a
// generated file does not depend on the thread count. Header-only; thread-safe (no state).
#include <cstdint>

namespace sparrow::tools {

inline uint64_t SplitMix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The stream of row `row` of a tensor whose stream seed is `seed`.
inline uint64_t RowStream(uint64_t seed, int64_t row) {
  return seed ^ (static_cast<uint64_t>(row) * 0xd1b54a32d192ed03ull);
}

// Uniform in [center - half_width, center + half_width), 24 bits of resolution.
inline float UniformFloat(uint64_t& state, float center, float half_width) {
  const float u = static_cast<float>(SplitMix(state) >> 40);  // [0, 2^24)
  return center - half_width + u * (2.0f * half_width / 16777216.0f);
}

}  // namespace sparrow::tools
