// The AMX variant (the AVX-512 one plus Intel's tile matrix unit, AMX-TILE and AMX-INT8, compiled
// with -mamx-tile -mamx-int8): prompt-sized matrix products of Q4_0, Q8_0, Q4_K, Q5_K and Q6_K
// weights on tiles, bit-identical to the scalar dot products. Only reached after CPUID, XCR0 and
// Linux's arch_prctl(ARCH_REQ_XCOMP_PERM) say this process may use the tiles (cpu_features.cc).
//
// Why it is fast: one TDPBUSD / TDPBSSD multiplies 16 weight rows by 16 tokens over a 32-element
// block (8192 multiply-adds) where VPDPBUSD does 32. What is left is the exact arithmetic every
// kernel must do per block (scales per row and per token): the tile's int32 sums are stored and
// finished with AVX-512, 16 tokens per vector, in the scalar kernels' order (amx_q32.inc,
// amx_kquants.inc).
//
// Layout: the weights are tile A (16 rows x 32 bytes: one block of 16 rows), the activations tile
// B (8 rows x 64 bytes: 4 bytes of each of 16 tokens per row), the sums tile C (16 rows x 16
// tokens). Element order within a block does not change an integer sum, so both keep the block's
// natural order. Batches under 16 tokens, and the rows and tokens that do not fill a tile, go to
// the AVX-512 kernel this table replaced.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/kernels/fp16.h"
#include "engine/kernels/quant_blocks.h"
#include "engine/kernels/vec_dot.h"

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace sparrow::kernels {
namespace {

#include "engine/kernels/x86/gemm_q32_layout.inc"

inline constexpr int kTile = 16;       // weight rows per A tile, tokens per B tile
inline constexpr int kChunkTiles = 4;  // token tiles whose activations are laid out at once

// Tiles 0-3: C for (row tile i, token tile j) = 2i + j; 4-5: A for row tiles 0-1; 6-7: B for
// token tiles 0-1. The configuration is per thread and stays loaded: only this file uses tiles.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

// `k_bytes`: the elements of one block product (32; Q6_K's sub-blocks: 16), A's width and four
// times B's height. Reloaded only when a product of the other width comes.
void ConfigureTiles(int k_bytes) {
  thread_local int loaded = 0;
  if (loaded == k_bytes) return;
  TileConfig c;
  for (int t = 0; t < 4; ++t) {
    c.rows[t] = kTile;
    c.colsb[t] = kTile * 4;
  }
  for (int t = 4; t < 6; ++t) {
    c.rows[t] = kTile;
    c.colsb[t] = static_cast<uint16_t>(k_bytes);
  }
  for (int t = 6; t < 8; ++t) {
    c.rows[t] = static_cast<uint8_t>(k_bytes / 4);
    c.colsb[t] = kTile * 4;
  }
  _tile_loadconfig(&c);
  loaded = k_bytes;
}

// 64-byte aligned scratch of this thread, grown as needed and kept.
template <typename T>
T* Scratch(std::vector<uint8_t>& v, size_t count) {
  const size_t bytes = count * sizeof(T) + 64;
  if (v.size() < bytes) v.resize(bytes);
  auto p = reinterpret_cast<uintptr_t>(v.data());
  return reinterpret_cast<T*>((p + 63) & ~uintptr_t{63});
}

// Tile c = tile a x tile b, stored to `out`: unsigned weights (Q4_0's nibbles, K-quants) or
// signed ones (Q8_0) times signed activations. A macro: GCC's tile intrinsics paste the tile
// numbers into the instruction text, so they must be literals.
#define SPARROW_AMX_PRODUCT(kUnsigned, c, a, b, out) \
  do {                                               \
    _tile_zero(c);                                   \
    if constexpr (kUnsigned) {                       \
      _tile_dpbusd(c, a, b);                         \
    } else {                                         \
      _tile_dpbssd(c, a, b);                         \
    }                                                \
    _tile_stored(c, out, 64);                        \
  } while (0)

// One block's kRi x kTj products: A tiles from a0, a1 (rows a_stride bytes apart), B tiles from
// b0, b1 (64 bytes a row), product (i, j) stored at c + (2i + j) * 256 int32.
template <bool kUnsigned, int kRi, int kTj>
inline void TileProducts(const void* a0, const void* a1, int a_stride, const void* b0,
                         const void* b1, int32_t* c) {
  constexpr int kC = kTile * kTile;
  _tile_loadd(4, a0, a_stride);
  if constexpr (kRi == 2) _tile_loadd(5, a1, a_stride);
  _tile_loadd(6, b0, 64);
  if constexpr (kTj == 2) _tile_loadd(7, b1, 64);
  SPARROW_AMX_PRODUCT(kUnsigned, 0, 4, 6, c);
  if constexpr (kTj == 2) SPARROW_AMX_PRODUCT(kUnsigned, 1, 4, 7, c + kC);
  if constexpr (kRi == 2) SPARROW_AMX_PRODUCT(kUnsigned, 2, 5, 6, c + 2 * kC);
  if constexpr (kRi == 2 && kTj == 2) SPARROW_AMX_PRODUCT(kUnsigned, 3, 5, 7, c + 3 * kC);
}

// The byte offsets of 16 rows `stride` apart, for gathers (rows of up to 128 MiB).
inline __m512i RowOffsets(size_t stride) {
  return _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                            _mm512_set1_epi32(static_cast<int>(stride)));
}

#include "engine/kernels/x86/amx_q32.inc"
//
#include "engine/kernels/x86/amx_kquants.inc"

// The tiles of a product: 64 tokens at a time are laid out for B; for every 32 rows, laid out
// for A, each pair of token tiles is computed (Kind::Pair); what does not fill a tile goes to
// Kind::fallback, the AVX-512 kernel of the same format.
template <typename Kind>
void GemmTiles(const void* w, size_t w_stride, int64_t n_rows, const void* act, size_t act_stride,
               int64_t n_tokens, int64_t n, float* y, int64_t ldy) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(act);
  const int64_t t_full = n_tokens / kTile * kTile, r_full = n_rows / kTile * kTile;
  constexpr size_t kGatherReach = size_t{1} << 31;
  if (t_full == 0 || r_full == 0 || w_stride * kTile >= kGatherReach ||
      act_stride * kTile >= kGatherReach) {
    Kind::fallback(w, w_stride, n_rows, act, act_stride, n_tokens, n, y, ldy);
    return;
  }
  ConfigureTiles(Kind::kBlockBytes);
  for (int64_t t0 = 0; t0 < t_full; t0 += kChunkTiles * kTile) {
    const int tiles = static_cast<int>(std::min<int64_t>(kChunkTiles, (t_full - t0) / kTile));
    const typename Kind::Tokens tokens =
        Kind::LayOutTokens(ab + t0 * act_stride, act_stride, tiles, n);
    for (int64_t r0 = 0; r0 < r_full; r0 += 2 * kTile) {
      const int row_tiles = static_cast<int>(std::min<int64_t>(2, (r_full - r0) / kTile));
      const typename Kind::Rows rows = Kind::LayOutRows(wb + r0 * w_stride, w_stride, row_tiles, n);
      // The next rows into L2 while these compute: laid out row by row, they would otherwise
      // wait on memory at every block (the hardware prefetcher does not follow 32 streams).
      const int64_t next = std::min(r0 + 2 * kTile, r_full);
      const int64_t next_rows = std::min<int64_t>(2 * kTile, r_full - next);
      for (int64_t i = 0; i < next_rows; ++i) {
        const uint8_t* row = wb + (next + i) * w_stride;
        for (int64_t at = 0; at < static_cast<int64_t>(w_stride); at += 64)
          _mm_prefetch(reinterpret_cast<const char*>(row + at), _MM_HINT_T1);
      }
      for (int tile = 0; tile < tiles; tile += 2) {
        float* yt = y + (t0 + tile * kTile) * ldy + r0;
        const bool two_tokens = tile + 1 < tiles;
        if (row_tiles == 2) {
          two_tokens ? Kind::template Pair<2, 2>(rows, tokens, tile, yt, ldy)
                     : Kind::template Pair<2, 1>(rows, tokens, tile, yt, ldy);
        } else {
          two_tokens ? Kind::template Pair<1, 2>(rows, tokens, tile, yt, ldy)
                     : Kind::template Pair<1, 1>(rows, tokens, tile, yt, ldy);
        }
      }
    }
  }
  if (r_full < n_rows) {
    Kind::fallback(wb + r_full * w_stride, w_stride, n_rows - r_full, act, act_stride, t_full, n,
                   y + r_full, ldy);
  }
  if (t_full < n_tokens) {
    Kind::fallback(w, w_stride, n_rows, ab + t_full * act_stride, act_stride, n_tokens - t_full, n,
                   y + t_full * ldy, ldy);
  }
}

using Q4_0Tiles = Q32Kind<true>;
using Q8_0Tiles = Q32Kind<false>;
using Q4_KTiles = K4Kind<false, BlockQ4_K>;
using Q5_KTiles = K4Kind<true, BlockQ5_K>;
using Q6_KTiles = K6Kind;

}  // namespace

// Over a table that already holds the AVX-512 kernels: their activation formats stay, and their
// matrix kernels take what does not fill a tile.
void InstallAmxKernels(KernelTable* t) {
  auto install = [t](TensorType type, GemmFn* fallback, GemmFn tiles) {
    GemmKernel& g = t->gemm[static_cast<int>(type)];
    *fallback = g.run;
    g.run = tiles;
  };
  install(TensorType::kQ4_0, &Q4_0Tiles::fallback, GemmTiles<Q4_0Tiles>);
  install(TensorType::kQ8_0, &Q8_0Tiles::fallback, GemmTiles<Q8_0Tiles>);
  install(TensorType::kQ4_K, &Q4_KTiles::fallback, GemmTiles<Q4_KTiles>);
  install(TensorType::kQ5_K, &Q5_KTiles::fallback, GemmTiles<Q5_KTiles>);
  Q6_KTiles::dot = t->vec_dot[static_cast<int>(TensorType::kQ6_K)];
  t->gemm[static_cast<int>(TensorType::kQ6_K)].run = Q6_KDots;
  install(TensorType::kQ6_K, &Q6_KTiles::fallback, GemmTiles<Q6_KTiles>);
}

}  // namespace sparrow::kernels
