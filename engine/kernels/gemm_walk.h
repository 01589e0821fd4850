#pragma once
// The cache blocking shared by the GEMM kernels of every architecture (x86/, arm/). A chunk of
// weight rows small enough for L1 (about kChunkBytes) meets a chunk of kTokenChunk tokens (their
// packed activations stay in L2) before the next rows are read, so a prompt batch reads the
// weights n_tokens / kTokenChunk times. Inside a chunk pair the kernel's register tiles of kR rows
// x kT tokens are walked row tile by row tile; the last row tile of a chunk and the last token
// tile may be smaller. Header-only templates: each kernel file instantiates them with its own
// (internal-linkage) tile functions.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace sparrow::kernels::gemm {

inline constexpr int64_t kTokenChunk = 64;
inline constexpr int64_t kChunkBytes = 16 * 1024;

// Calls tile(r, rows, t0, tokens) for every tile: rows in [1, kR], tokens in [1, kT]. A kernel
// whose kT does not divide kTokenChunk may pass a chunk that kT does divide.
template <int kR, int kT, int64_t kChunkTokens = kTokenChunk, typename TileFn>
void WalkTiles(int64_t n_rows, int64_t n_tokens, size_t row_bytes, TileFn&& tile) {
  const int64_t row_chunk =
      std::max<int64_t>(kR, kChunkBytes / static_cast<int64_t>(row_bytes) / kR * kR);
  for (int64_t tc = 0; tc < n_tokens; tc += kChunkTokens) {
    const int64_t tc_end = std::min(n_tokens, tc + kChunkTokens);
    for (int64_t rc = 0; rc < n_rows; rc += row_chunk) {
      const int64_t rc_end = std::min(n_rows, rc + row_chunk);
      for (int64_t t0 = tc; t0 < tc_end; t0 += kT) {
        const int tokens = static_cast<int>(std::min<int64_t>(kT, tc_end - t0));
        for (int64_t r = rc; r < rc_end; r += kR)
          tile(r, static_cast<int>(std::min<int64_t>(kR, rc_end - r)), t0, tokens);
      }
    }
  }
}

// Turns a tile's runtime token count (1..kT) into a compile-time constant:
// f(std::integral_constant<int, T>).
template <int kT, typename F>
[[gnu::always_inline]] inline void WithTokens(int tokens, F&& f) {
  if constexpr (kT > 1) {
    if (tokens < kT) return WithTokens<kT - 1>(tokens, f);
  }
  f(std::integral_constant<int, kT>{});
}

}  // namespace sparrow::kernels::gemm
