// One conformance test over the whole kernel table (ggml's test-backend-ops idea): every filled
// slot of every instruction-set variant this CPU runs (under qemu: both ARM variants), against
// the scalar table, on awkward sizes, so no kernel a variant installs ships unchecked. Bit for
// bit wherever the slot's contract says so (vec_dot.h), within a few ulps for the attention
// loops (attention_ops.h). A new kind of slot in KernelTable needs its check here.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/kernels/dequantize.h"
#include "engine/kernels/vec_dot.h"
#include "tests/unit/kernels/kernel_test_util.h"

namespace sparrow::kernels {
namespace {

using testing::RandomRow;
using testing::RandomWeightRow;
using testing::SimdIsas;

int Id(TensorType t) {
  return static_cast<int>(t);
}

// Row lengths that are a multiple of `unit`: one, a few and many units, some off SIMD widths.
std::vector<int64_t> Lengths(int64_t unit) {
  if (unit == 1) return {1, 7, 8, 15, 17, 33, 100, 257};
  if (unit == 32) return {32, 96, 224, 544};
  return {256, 768};
}

int64_t Unit(TensorType weight) {
  const auto w = GetTensorTypeTraits(weight)->block_elems;
  const auto a = GetTensorTypeTraits(VecDotType(weight))->block_elems;
  return std::max<int64_t>(w, a);
}

std::vector<uint8_t> ScalarAct(TensorType act, const std::vector<float>& x) {
  std::vector<uint8_t> out(RowBytes(act, static_cast<int64_t>(x.size())));
  GetKernelTable(KernelIsa::kScalar)
      .quantize_act[Id(act)](x.data(), out.data(), static_cast<int64_t>(x.size()));
  return out;
}

void ExpectBits(const std::vector<float>& got, const std::vector<float>& want,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
        << what << " element " << i << ": " << got[i] << " vs " << want[i];
}

void CheckQuantizeAct(const KernelTable& t, TensorType act) {
  const int64_t unit = GetTensorTypeTraits(act)->block_elems;
  for (int64_t n : Lengths(unit)) {
    const auto x = RandomRow(n, 3 + static_cast<uint32_t>(n));
    std::vector<uint8_t> got(RowBytes(act, n));
    t.quantize_act[Id(act)](x.data(), got.data(), n);
    EXPECT_EQ(got, ScalarAct(act, x)) << "quantize_act " << TensorTypeName(act) << " n=" << n;
  }
}

void CheckVecDot(const KernelTable& t, TensorType w) {
  const TensorType act = VecDotType(w);
  for (int64_t n : Lengths(Unit(w))) {
    const auto row = RandomWeightRow(w, n, 5 + static_cast<uint32_t>(n));
    const auto a = ScalarAct(act, RandomRow(n, 7));
    const float want = GetKernelTable(KernelIsa::kScalar).vec_dot[Id(w)](row.data(), a.data(), n);
    const float got = t.vec_dot[Id(w)](row.data(), a.data(), n);
    ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want))
        << "vec_dot " << TensorTypeName(w) << " n=" << n;
  }
}

// The GEMM of rows x tokens against the scalar vec_dot of every pair.
void CheckGemm(const KernelTable& t, TensorType w) {
  const GemmKernel& g = t.gemm[Id(w)];
  const TensorType act = VecDotType(w);
  const VecDotFn dot = GetKernelTable(KernelIsa::kScalar).vec_dot[Id(w)];
  for (int64_t n : Lengths(Unit(w))) {
    for (int64_t rows : {1, 3, 5, 9}) {
      for (int64_t tokens : {1, 2, 7}) {
        const size_t row_bytes = RowBytes(w, n);
        std::vector<uint8_t> wm;
        for (int64_t r = 0; r < rows; ++r) {
          const auto row = RandomWeightRow(w, n, 11 + static_cast<uint32_t>(r * 7 + n));
          wm.insert(wm.end(), row.begin(), row.end());
        }
        const size_t act_stride = g.pack_act ? g.packed_row_bytes(n) : RowBytes(act, n);
        std::vector<uint8_t> acts(act_stride * tokens), plain;
        std::vector<float> want(tokens * rows), got(tokens * rows, -1.0f);
        for (int64_t k = 0; k < tokens; ++k) {
          const auto x = RandomRow(n, 13 + static_cast<uint32_t>(k));
          const auto q = ScalarAct(act, x);
          if (g.pack_act) {
            g.pack_act(x.data(), acts.data() + k * act_stride, n);
          } else {
            std::memcpy(acts.data() + k * act_stride, q.data(), q.size());
          }
          for (int64_t r = 0; r < rows; ++r)
            want[k * rows + r] = dot(wm.data() + r * row_bytes, q.data(), n);
        }
        if (g.run) {
          g.run(wm.data(), row_bytes, rows, acts.data(), act_stride, tokens, n, got.data(), rows);
        } else {
          got = want;  // gather only: checked below
        }
        const std::string what = std::string(TensorTypeName(w)) + " n=" + std::to_string(n) +
                                 " rows=" + std::to_string(rows) +
                                 " tokens=" + std::to_string(tokens);
        ExpectBits(got, want, "gemm " + what);
        if (g.gather == nullptr || tokens != 1) continue;
        // The gather slot: the same rows in a scattered order, some twice, against the first
        // token.
        std::vector<const uint8_t*> ptrs;
        std::vector<float> gathered_want;
        for (int64_t i = 0; i < 2 * rows; ++i) {
          const int64_t r = (i * 5 + 2) % rows;
          ptrs.push_back(wm.data() + r * row_bytes);
          gathered_want.push_back(want[r]);
        }
        std::vector<float> gathered(ptrs.size(), -1.0f);
        g.gather(ptrs.data(), static_cast<int64_t>(ptrs.size()), acts.data(), n, gathered.data());
        ExpectBits(gathered, gathered_want, "gemm gather " + what);
      }
    }
  }
}

void CheckAxpy(const KernelTable& t) {
  for (int64_t n : Lengths(1)) {
    const auto x = RandomRow(n, 17), y0 = RandomRow(n, 19);
    std::vector<float> want = y0, got = y0;
    GetKernelTable(KernelIsa::kScalar).axpy(-1.25f, x.data(), want.data(), n);
    t.axpy(-1.25f, x.data(), got.data(), n);
    ExpectBits(got, want, "axpy n=" + std::to_string(n));
  }
}

void CheckAxpyRow(const KernelTable& t, TensorType w) {
  const AxpyRowFn ref = GetKernelTable(KernelIsa::kScalar).axpy_row[Id(w)];
  ASSERT_NE(ref, nullptr) << "axpy_row " << TensorTypeName(w) << " has no scalar reference";
  for (int64_t n : Lengths(GetTensorTypeTraits(w)->block_elems)) {
    const auto row = RandomWeightRow(w, n, 23 + static_cast<uint32_t>(n));
    const auto y0 = RandomRow(n, 29);
    std::vector<float> want = y0, got = y0;
    ref(0.3f, row.data(), want.data(), n);
    t.axpy_row[Id(w)](0.3f, row.data(), got.data(), n);
    ExpectBits(got, want, "axpy_row " + std::string(TensorTypeName(w)) + " n=" + std::to_string(n));
  }
}

// Against the scalar table's accumulate_rows where it has one (Q4_0's integer arithmetic, checked
// against a plain reimplementation in sparse_ops_test), else against row-by-row axpy_row.
void CheckAccumulateRows(const KernelTable& t, TensorType w) {
  const KernelTable& scalar = GetKernelTable(KernelIsa::kScalar);
  const AccumulateRowsFn many = scalar.accumulate_rows[Id(w)];
  const AxpyRowFn ref = scalar.axpy_row[Id(w)];
  ASSERT_TRUE(many || ref) << "accumulate_rows " << TensorTypeName(w) << " has no reference";
  if (many && t.isa == KernelIsa::kScalar) return;
  for (int64_t len : {32, 64, 96, 288}) {
    std::vector<std::vector<uint8_t>> rows;
    std::vector<const uint8_t*> ptrs;
    for (int k = 0; k < 21; ++k) rows.push_back(RandomWeightRow(w, len, 31 + k));
    for (const auto& r : rows) ptrs.push_back(r.data());
    const auto alpha = RandomRow(21, 37), y0 = RandomRow(len, 41);
    std::vector<float> want = y0, got = y0;
    if (many) {
      many(ptrs.data(), 0, alpha.data(), 21, want.data(), len);
    } else {
      for (int k = 0; k < 21; ++k) ref(alpha[k], rows[k].data(), want.data(), len);
    }
    t.accumulate_rows[Id(w)](ptrs.data(), 0, alpha.data(), 21, got.data(), len);
    ExpectBits(got, want,
               "accumulate_rows " + std::string(TensorTypeName(w)) + " len=" + std::to_string(len));
  }
}

void CheckAttention(const KernelTable& t) {
  const KernelTable& s = GetKernelTable(KernelIsa::kScalar);
  for (int64_t d : {8, 32, 64, 80}) {
    for (int64_t n : {1, 5, 17}) {
      std::vector<std::vector<float>> rows;
      std::vector<const float*> ptrs;
      for (int64_t j = 0; j < n; ++j)
        rows.push_back(RandomRow(d + 4, 43 + static_cast<uint32_t>(j)));
      for (const auto& r : rows) ptrs.push_back(r.data());
      const auto q = RandomRow(d, 47);
      std::vector<float> want(n), got(n);
      s.attn_scores(q.data(), ptrs.data(), 4, n, d, 0.125f, want.data());
      t.attn_scores(q.data(), ptrs.data(), 4, n, d, 0.125f, got.data());
      for (int64_t j = 0; j < n; ++j)
        EXPECT_NEAR(got[j], want[j], 1e-5f * (1 + std::fabs(want[j]))) << "attn_scores";
      std::vector<float> e1 = want, e2 = want;
      const double s1 = s.exp_minus_max(e1.data(), n), s2 = t.exp_minus_max(e2.data(), n);
      EXPECT_NEAR(s2, s1, 1e-5 * s1) << "exp_minus_max";
      std::vector<float> m1(d), m2(d);
      s.attn_mix(e1.data(), ptrs.data(), 4, n, d, m1.data());
      t.attn_mix(e1.data(), ptrs.data(), 4, n, d, m2.data());
      for (int64_t i = 0; i < d; ++i)
        EXPECT_NEAR(m2[i], m1[i], 1e-5f * (1 + std::fabs(m1[i]))) << "attn_mix";
    }
  }
}

TEST(KernelTableTest, EverySlotOfEveryVariantAgreesWithTheScalarTable) {
  std::vector<KernelIsa> isas = SimdIsas();
  isas.insert(isas.begin(), KernelIsa::kScalar);  // the scalar GEMM/row slots against vec_dot
  int slots = 0;
  for (KernelIsa isa : isas) {
    SCOPED_TRACE(std::string(KernelIsaName(isa)));
    const KernelTable& t = GetKernelTable(isa);
    for (int id = 0; id < kNumTensorTypeIds; ++id) {
      const auto type = static_cast<TensorType>(id);
      const auto traits = GetTensorTypeTraits(type);
      if (t.quantize_act[id]) {
        CheckQuantizeAct(t, type);
        ++slots;
      }
      if (t.vec_dot[id]) {
        ASSERT_TRUE(traits && HasVecDot(type)) << "vec_dot slot " << id << " of an unknown type";
        CheckVecDot(t, type);
        ++slots;
      }
      if (t.gemm[id].run || t.gemm[id].gather) {
        CheckGemm(t, type);
        slots += (t.gemm[id].run != nullptr) + (t.gemm[id].gather != nullptr);
      }
      if (t.axpy_row[id]) {
        CheckAxpyRow(t, type);
        ++slots;
      }
      if (t.accumulate_rows[id]) {
        CheckAccumulateRows(t, type);
        ++slots;
      }
    }
    ASSERT_NE(t.axpy, nullptr);
    CheckAxpy(t);
    ASSERT_TRUE(t.attn_scores && t.exp_minus_max && t.attn_mix);
    CheckAttention(t);
    slots += 4;
  }
  std::printf("[kernel table] %d slots checked over %zu variants\n", slots, isas.size());
  EXPECT_GT(slots, 30);
}

}  // namespace
}  // namespace sparrow::kernels
