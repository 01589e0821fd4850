// The AMX variant (the AVX-512 one plus Intel's tile matrix unit, AMX-TILE and AMX-INT8, compiled
// with -mamx-tile -mamx-int8): prompt-sized Q4_0 and Q8_0 matrix products on tiles, bit-identical
// to one scalar::DotQ4_0 / DotQ8_0 per (row, token) pair. Only reached after CPUID, XCR0 and
// Linux's arch_prctl(ARCH_REQ_XCOMP_PERM) say this process may use the tiles (cpu_features.cc).
//
// Why it is fast: one TDPBUSD / TDPBSSD multiplies 16 weight rows by 16 tokens over a whole
// 32-element block (8192 multiply-adds) where VPDPBUSD does 32. What is left is the float work
// every kernel must do per block to stay exact (a block scale per row and per token): the tile's
// int32 sums are stored and scaled with AVX-512, 16 tokens per vector.
//
// Layout: the weights are tile A (16 rows x 32 bytes: one block of 16 rows; Q8_0 straight from
// the model's rows with the row stride, Q4_0 with its nibbles spread to bytes once per 32 rows
// and 64 tokens), the activations tile B (8 rows x 64 bytes: 4 bytes of each of 16 tokens per
// row, copied from the AVX-512 kernels' packed rows, PackedGroup, once per 64 tokens), the sums
// tile C (16 rows x 16 tokens). Element order within a block does not change an integer sum, so
// both keep the block's natural order.
//
// The float arithmetic is the scalar kernel's: term = (dx * dy) * float(block sum), block b added
// to lane b % 8, lanes summed in scalar::SumLanes' tree ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).
// Batches under 16 tokens, and the rows and tokens that do not fill a tile, go to the AVX-512
// kernel this table replaced, which keeps the same order.
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

namespace sparrow::kernels {
namespace {

#include "engine/kernels/x86/gemm_q32_layout.inc"

inline constexpr int kTile = 16;       // weight rows per A tile, tokens per B tile
inline constexpr int kChunkTiles = 4;  // token tiles whose activations are laid out at once
inline constexpr int kAccLanes = 8;    // block b goes to lane b % 8
inline constexpr int kQ4Bytes = sizeof(BlockQ4_0), kQ8Bytes = sizeof(BlockQ8_0);
// Where the 4 bytes of dword u (elements 4u..4u+3) of a block sit in a PackedGroup's quad:
// vector kVectorOfDword[u / 2] holds elements 8 * (u / 2) .. + 7 (kQuadOffset's inverse).
inline constexpr int kVectorOfDword[4] = {0, 2, 1, 3};

// The AVX-512 table's kernels, for what does not fill a tile (set when the table is installed).
GemmFn vnni_q4_0 = nullptr;
GemmFn vnni_q8_0 = nullptr;

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

void ConfigureTiles() {
  thread_local bool configured = false;
  if (configured) return;
  TileConfig c;
  for (int t = 0; t < 4; ++t) {
    c.rows[t] = kTile;
    c.colsb[t] = kTile * 4;
  }
  for (int t = 4; t < 6; ++t) {
    c.rows[t] = kTile;
    c.colsb[t] = kQK;
  }
  for (int t = 6; t < 8; ++t) {
    c.rows[t] = kQK / 4;
    c.colsb[t] = kTile * 4;
  }
  _tile_loadconfig(&c);
  configured = true;
}

// 64-byte aligned scratch of this thread, grown as needed and kept.
template <typename T>
T* Scratch(std::vector<uint8_t>& v, size_t count) {
  const size_t bytes = count * sizeof(T) + 64;
  if (v.size() < bytes) v.resize(bytes);
  auto p = reinterpret_cast<uintptr_t>(v.data());
  return reinterpret_cast<T*>((p + 63) & ~uintptr_t{63});
}

// The activations of up to kChunkTiles token tiles, per block: the B tile, and each token's
// block scale and (Q4_0) offset.
struct TokenChunk {
  int8_t* b = nullptr;     // [tile][block][8][64]
  float* dy = nullptr;     // [tile][block][16]
  int32_t* off = nullptr;  // [tile][block][16]
  int64_t nb = 0;
  const int8_t* B(int tile, int64_t block) const { return b + (tile * nb + block) * 512; }
};

TokenChunk LayOutTokens(const uint8_t* act, size_t act_stride, int tiles, int64_t nb) {
  thread_local std::vector<uint8_t> store;
  TokenChunk c;
  c.nb = nb;
  const size_t blocks = static_cast<size_t>(tiles * nb);
  c.b = Scratch<int8_t>(store, blocks * (512 + 2 * 64));
  c.dy = reinterpret_cast<float*>(c.b + blocks * 512);
  c.off = reinterpret_cast<int32_t*>(c.dy + blocks * kTile);
  for (int tile = 0; tile < tiles; ++tile) {
    for (int j = 0; j < kTile; ++j) {
      const auto* groups =
          reinterpret_cast<const PackedGroup*>(act + (tile * kTile + j) * act_stride);
      for (int64_t blk = 0; blk < nb; ++blk) {
        const PackedGroup& g = groups[blk / 8];
        const int k = static_cast<int>(blk % 8);
        int8_t* dst = c.b + (tile * nb + blk) * 512 + 4 * j;
        for (int u = 0; u < 8; ++u) {
          std::memcpy(dst + 64 * u,
                      &g.qs[k / 4][kVectorOfDword[u / 2]][8 * kQuadSlot[k % 4] + 4 * (u % 2)], 4);
        }
        c.dy[(tile * nb + blk) * kTile + j] = g.dy[kLaneOfBlock[k]];
        c.off[(tile * nb + blk) * kTile + j] = g.off[kLaneOfBlock[k]];
      }
    }
  }
  return c;
}

// Up to two row tiles of weights: each row's block scales, and for Q4_0 the nibbles as bytes
// (low nibbles are elements 0-15, high ones 16-31: the block's natural order).
template <bool kQ4>
struct RowTiles {
  const uint8_t* w = nullptr;  // the first row
  size_t stride = 0;
  int64_t nb = 0;
  uint8_t* a = nullptr;  // Q4_0: [tile][block][16][32]
  float* dx = nullptr;   // [tile][block][16]

  const void* A(int tile, int64_t block) const {
    if constexpr (kQ4) {
      return a + (tile * nb + block) * 512;
    } else {
      return w + tile * kTile * stride + block * kQ8Bytes + 2;
    }
  }
};

template <bool kQ4>
RowTiles<kQ4> LayOutRows(const uint8_t* w, size_t stride, int tiles, int64_t nb) {
  thread_local std::vector<uint8_t> store;
  constexpr int kBytes = kQ4 ? kQ4Bytes : kQ8Bytes;
  RowTiles<kQ4> r;
  r.w = w;
  r.stride = stride;
  r.nb = nb;
  const size_t blocks = static_cast<size_t>(tiles * nb);
  r.dx = Scratch<float>(store, blocks * kTile + (kQ4 ? blocks * 128 : 0));
  if constexpr (kQ4) r.a = reinterpret_cast<uint8_t*>(r.dx + blocks * kTile);
  // The 16 rows' scales of a block in one gather (a dword from each row, its low half the
  // scale); rows further apart than a gather's 32-bit offsets reach are read one by one.
  const bool gather = stride * kTile < (size_t{1} << 31);
  const __m512i offsets =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(static_cast<int>(gather ? stride : 0)));
  const __m128i nibble = _mm_set1_epi8(0x0f);
  for (int tile = 0; tile < tiles; ++tile) {
    const uint8_t* first = w + tile * kTile * stride;
    for (int64_t blk = 0; blk < nb; ++blk) {
      float* dx = r.dx + (tile * nb + blk) * kTile;
      if (gather) {
        const __m512i d = _mm512_i32gather_epi32(offsets, first + blk * kBytes, 1);
        _mm512_store_ps(dx, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(d)));
      } else {
        for (int i = 0; i < kTile; ++i) {
          uint16_t d;
          std::memcpy(&d, first + i * stride + blk * kBytes, 2);
          dx[i] = Fp16ToFp32(d);
        }
      }
    }
    if constexpr (kQ4) {
      for (int i = 0; i < kTile; ++i) {
        const uint8_t* row = first + i * stride;
        for (int64_t blk = 0; blk < nb; ++blk) {
          const __m128i v =
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + blk * kBytes + 2));
          uint8_t* dst = r.a + (tile * nb + blk) * 512 + 32 * i;
          _mm_store_si128(reinterpret_cast<__m128i*>(dst), _mm_and_si128(v, nibble));
          _mm_store_si128(reinterpret_cast<__m128i*>(dst + 16),
                          _mm_and_si128(_mm_srli_epi16(v, 4), nibble));
        }
      }
    }
  }
  return r;
}

// Tile kC = tile kA x tile kB, stored to `out`. Q4_0: unsigned nibbles x signed activations (the
// offset 8 * sum(y) is taken off with the float terms); Q8_0: signed x signed.
template <bool kQ4, int kC, int kA, int kB>
inline void Product(int32_t* out) {
  _tile_zero(kC);
  if constexpr (kQ4) {
    _tile_dpbusd(kC, kA, kB);
  } else {
    _tile_dpbssd(kC, kA, kB);
  }
  _tile_stored(kC, out, 64);
}

// One block's products for kRi row tiles x kTj token tiles into c[2i + j] (16 x 16 int32 each).
template <bool kQ4, int kRi, int kTj>
inline void BlockProducts(const RowTiles<kQ4>& rows, const TokenChunk& tokens, int tile0,
                          int64_t blk, int32_t (*c)[kTile * kTile]) {
  const int a_stride = kQ4 ? kQK : static_cast<int>(rows.stride);
  _tile_loadd(4, rows.A(0, blk), a_stride);
  if constexpr (kRi == 2) _tile_loadd(5, rows.A(1, blk), a_stride);
  _tile_loadd(6, tokens.B(tile0, blk), 64);
  if constexpr (kTj == 2) _tile_loadd(7, tokens.B(tile0 + 1, blk), 64);
  Product<kQ4, 0, 4, 6>(c[0]);
  if constexpr (kTj == 2) Product<kQ4, 1, 4, 7>(c[1]);
  if constexpr (kRi == 2) Product<kQ4, 2, 5, 6>(c[2]);
  if constexpr (kRi == 2 && kTj == 2) Product<kQ4, 3, 5, 7>(c[3]);
}

// y for kRi x kTj tiles: rows [r0, r0 + 16 kRi) of `rows`, tokens tile0.. of `tokens`.
template <bool kQ4, int kRi, int kTj>
void TilePair(const RowTiles<kQ4>& rows, const TokenChunk& tokens, int tile0, float* y,
              int64_t ldy) {
  alignas(64) int32_t c[4][kTile * kTile];
  // acc[lane][2i + j][row][token]
  thread_local std::vector<uint8_t> store;
  float* acc = Scratch<float>(store, kAccLanes * 4 * kTile * kTile);
  std::memset(acc, 0, sizeof(float) * kAccLanes * 4 * kTile * kTile);
  const int64_t nb = rows.nb;
  for (int64_t blk = 0; blk < nb; ++blk) {
    BlockProducts<kQ4, kRi, kTj>(rows, tokens, tile0, blk, c);
    float* lane = acc + (blk % kAccLanes) * 4 * kTile * kTile;
    for (int i = 0; i < kRi; ++i) {
      const float* dx = rows.dx + (i * nb + blk) * kTile;
      for (int j = 0; j < kTj; ++j) {
        const int64_t tb = (tile0 + j) * nb + blk;
        const __m512 dy = _mm512_load_ps(tokens.dy + tb * kTile);
        const __m512i off = _mm512_load_si512(tokens.off + tb * kTile);
        const int32_t* cij = c[2 * i + j];
        float* a = lane + (2 * i + j) * kTile * kTile;
        for (int r = 0; r < kTile; ++r) {
          __m512i sums = _mm512_load_si512(cij + r * kTile);
          if constexpr (kQ4) sums = _mm512_sub_epi32(sums, off);
          const __m512 scale = _mm512_mul_ps(_mm512_set1_ps(dx[r]), dy);
          const __m512 term = _mm512_mul_ps(scale, _mm512_cvtepi32_ps(sums));
          _mm512_store_ps(a + r * kTile, _mm512_add_ps(_mm512_load_ps(a + r * kTile), term));
        }
      }
    }
  }
  // scalar::SumLanes' tree over the 8 lanes, 16 tokens at a time.
  constexpr int kLaneStride = 4 * kTile * kTile;
  for (int i = 0; i < kRi; ++i) {
    for (int j = 0; j < kTj; ++j) {
      const float* a = acc + (2 * i + j) * kTile * kTile;
      for (int r = 0; r < kTile; ++r) {
        auto l = [&](int k) { return _mm512_load_ps(a + k * kLaneStride + r * kTile); };
        const __m512 s =
            _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(l(0), l(4)), _mm512_add_ps(l(2), l(6))),
                          _mm512_add_ps(_mm512_add_ps(l(1), l(5)), _mm512_add_ps(l(3), l(7))));
        alignas(64) float out[kTile];
        _mm512_store_ps(out, s);
        float* yr = y + (j * kTile) * ldy + i * kTile + r;
        for (int t = 0; t < kTile; ++t) yr[t * ldy] = out[t];
      }
    }
  }
}

template <bool kQ4>
void GemmAmx(const void* w, size_t w_stride, int64_t n_rows, const void* act, size_t act_stride,
             int64_t n_tokens, int64_t n, float* y, int64_t ldy) {
  const GemmFn vnni = kQ4 ? vnni_q4_0 : vnni_q8_0;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(act);
  const int64_t t_full = n_tokens / kTile * kTile, r_full = n_rows / kTile * kTile;
  if (t_full == 0 || r_full == 0) {
    vnni(w, w_stride, n_rows, act, act_stride, n_tokens, n, y, ldy);
    return;
  }
  ConfigureTiles();
  const int64_t nb = n / kQK;
  for (int64_t t0 = 0; t0 < t_full; t0 += kChunkTiles * kTile) {
    const int tiles = static_cast<int>(std::min<int64_t>(kChunkTiles, (t_full - t0) / kTile));
    const TokenChunk tokens = LayOutTokens(ab + t0 * act_stride, act_stride, tiles, nb);
    for (int64_t r0 = 0; r0 < r_full; r0 += 2 * kTile) {
      const int row_tiles = static_cast<int>(std::min<int64_t>(2, (r_full - r0) / kTile));
      const RowTiles<kQ4> rows = LayOutRows<kQ4>(wb + r0 * w_stride, w_stride, row_tiles, nb);
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
          two_tokens ? TilePair<kQ4, 2, 2>(rows, tokens, tile, yt, ldy)
                     : TilePair<kQ4, 2, 1>(rows, tokens, tile, yt, ldy);
        } else {
          two_tokens ? TilePair<kQ4, 1, 2>(rows, tokens, tile, yt, ldy)
                     : TilePair<kQ4, 1, 1>(rows, tokens, tile, yt, ldy);
        }
      }
    }
  }
  if (r_full < n_rows) {
    vnni(wb + r_full * w_stride, w_stride, n_rows - r_full, act, act_stride, t_full, n, y + r_full,
         ldy);
  }
  if (t_full < n_tokens) {
    vnni(w, w_stride, n_rows, ab + t_full * act_stride, act_stride, n_tokens - t_full, n,
         y + t_full * ldy, ldy);
  }
}

void GemmQ4_0Amx(const void* w, size_t w_stride, int64_t n_rows, const void* act, size_t act_stride,
                 int64_t n_tokens, int64_t n, float* y, int64_t ldy) {
  GemmAmx<true>(w, w_stride, n_rows, act, act_stride, n_tokens, n, y, ldy);
}

void GemmQ8_0Amx(const void* w, size_t w_stride, int64_t n_rows, const void* act, size_t act_stride,
                 int64_t n_tokens, int64_t n, float* y, int64_t ldy) {
  GemmAmx<false>(w, w_stride, n_rows, act, act_stride, n_tokens, n, y, ldy);
}

}  // namespace

// Over a table that already holds the AVX-512 kernels: the packed activations stay theirs.
void InstallAmxKernels(KernelTable* t) {
  GemmKernel& q4 = t->gemm[static_cast<int>(TensorType::kQ4_0)];
  GemmKernel& q8 = t->gemm[static_cast<int>(TensorType::kQ8_0)];
  vnni_q4_0 = q4.run;
  vnni_q8_0 = q8.run;
  q4.run = GemmQ4_0Amx;
  q8.run = GemmQ8_0Amx;
}

}  // namespace sparrow::kernels
