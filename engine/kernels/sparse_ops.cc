#include "engine/kernels/sparse_ops.h"

#include <algorithm>
#include <vector>

#include "engine/common/check.h"
#include "engine/kernels/dequantize.h"
#include "engine/kernels/thread_pool.h"
#include "engine/kernels/vec_dot.h"

namespace sparrow::kernels {
namespace {

std::vector<float>& FloatScratch(size_t n) {
  thread_local std::vector<float> scratch;
  if (scratch.size() < n) scratch.resize(n);
  return scratch;
}

const uint8_t* Row(const WeightMatrix& w, int32_t r) {
  SPARROW_CHECK(r >= 0 && r < w.rows);
  return static_cast<const uint8_t*>(w.data) + static_cast<size_t>(r) * w.row_stride_bytes;
}

// Columns split into spans for the threads, so every output element still sums its terms in
// order of k.
int64_t SpanColumns(const TensorTypeTraits& traits, int64_t cols, ThreadPool* pool) {
  const int n_threads = pool ? pool->size() : 1;
  const int64_t align = std::max<int64_t>(traits.block_elems, 64);
  int64_t chunk = (cols + 2 * n_threads - 1) / (2 * n_threads);
  chunk = std::max<int64_t>((chunk + align - 1) / align * align, 256);
  return std::min(chunk, cols);
}

// One token: y[0..cols) += sum over k < n of c[k] * row p[k] (nonzero c), in order of k, by
// the type's many-rows kernel.
void AccumulateMany(AccumulateRowsFn many, const TensorTypeTraits& traits, int64_t cols,
                    const uint8_t* const* p, const float* c, int64_t n, float* y,
                    ThreadPool* pool) {
  const int64_t chunk = SpanColumns(traits, cols, pool);
  const int64_t tasks = (cols + chunk - 1) / chunk;
  auto span = [&](int64_t task, int) {
    const int64_t c0 = task * chunk, len = std::min(chunk, cols - c0);
    const size_t offset = static_cast<size_t>(c0 / traits.block_elems) * traits.block_bytes;
    many(p, offset, c, n, y + c0, len);
  };
  if (pool && tasks > 1) {
    pool->ParallelFor(tasks, span);
  } else {
    for (int64_t task = 0; task < tasks; ++task) span(task, 0);
  }
}

}  // namespace

void AccumulateRowPointers(TensorType type, int64_t cols, const uint8_t* const* rows, int64_t n,
                           const float* alpha, float* out, ThreadPool* pool) {
  const auto traits = GetTensorTypeTraits(type);
  SPARROW_CHECK(traits && CanDequantize(type) && cols % traits->block_elems == 0);
  thread_local std::vector<const uint8_t*> ptrs;
  thread_local std::vector<float> coef;
  ptrs.clear();
  coef.clear();
  for (int64_t k = 0; k < n; ++k) {
    if (alpha[k] == 0.0f) continue;
    ptrs.push_back(rows[k]);
    coef.push_back(alpha[k]);
  }
  if (ptrs.empty()) return;
  const AccumulateRowsFn many = ActiveKernelTable().accumulate_rows[static_cast<int>(type)];
  if (many != nullptr && cols % 32 == 0) {
    AccumulateMany(many, *traits, cols, ptrs.data(), coef.data(), static_cast<int64_t>(ptrs.size()),
                   out, pool);
    return;
  }
  // The same terms as AccumulateRows' general path, through a matrix of the rows' addresses.
  const AxpyRowFn axpy_row = ActiveKernelTable().axpy_row[static_cast<int>(type)];
  const auto axpy = ActiveKernelTable().axpy;
  const int64_t chunk = SpanColumns(*traits, cols, pool);
  const int64_t tasks = (cols + chunk - 1) / chunk;
  // The pool's threads read this thread's lists (thread_local: name them by address).
  const uint8_t* const* p = ptrs.data();
  const float* c = coef.data();
  const size_t n_used = ptrs.size();
  auto run = [&](int64_t task, int) {
    const int64_t c0 = task * chunk, len = std::min(chunk, cols - c0);
    const size_t offset = static_cast<size_t>(c0 / traits->block_elems) * traits->block_bytes;
    float* buf = FloatScratch(len).data();
    for (size_t k = 0; k < n_used; ++k) {
      if (axpy_row) {
        axpy_row(c[k], p[k] + offset, out + c0, len);
      } else {
        DequantizeRow(type, p[k] + offset, buf, len);
        axpy(c[k], buf, out + c0, len);
      }
    }
  };
  if (pool && tasks > 1) {
    pool->ParallelFor(tasks, run);
  } else {
    for (int64_t t = 0; t < tasks; ++t) run(t, 0);
  }
}

void AccumulateRows(const WeightMatrix& w, const int32_t* rows, int64_t n, const float* alpha,
                    int64_t lda, int64_t n_tokens, float* out, int64_t ldo, ThreadPool* pool) {
  const auto traits = GetTensorTypeTraits(w.type);
  SPARROW_CHECK(traits && CanDequantize(w.type) && w.cols % traits->block_elems == 0);
  SPARROW_CHECK(ldo >= w.cols && n_tokens >= 0);
  if (n == 0 || n_tokens == 0) return;
  const auto axpy = ActiveKernelTable().axpy;
  // Types with a fused row kernel always take it (its rounding is the reference for them).
  const AxpyRowFn axpy_row = ActiveKernelTable().axpy_row[static_cast<int>(w.type)];
  const int64_t chunk = SpanColumns(*traits, w.cols, pool);
  const int64_t tasks = (w.cols + chunk - 1) / chunk;

  // Token by token: the rows with a coefficient, accumulated span by span in registers (Q4_0:
  // through integers, the only form its arithmetic has).
  const AccumulateRowsFn many = ActiveKernelTable().accumulate_rows[static_cast<int>(w.type)];
  if (many != nullptr && w.cols % 32 == 0) {
    thread_local std::vector<const uint8_t*> ptrs;
    thread_local std::vector<float> coef;
    for (int64_t t = 0; t < n_tokens; ++t) {
      ptrs.clear();
      coef.clear();
      for (int64_t k = 0; k < n; ++k) {
        const float a = alpha[t * lda + rows[k]];
        if (a == 0.0f) continue;
        ptrs.push_back(Row(w, rows[k]));
        coef.push_back(a);
      }
      AccumulateMany(many, *traits, w.cols, ptrs.data(), coef.data(),
                     static_cast<int64_t>(ptrs.size()), out + t * ldo, pool);
    }
    return;
  }

  auto run = [&](int64_t task, int) {
    const int64_t c0 = task * chunk, len = std::min(chunk, w.cols - c0);
    const size_t offset = static_cast<size_t>(c0 / traits->block_elems) * traits->block_bytes;
    float* buf = FloatScratch(len).data();
    for (int64_t k = 0; k < n; ++k) {
      const int32_t r = rows[k];
      bool any = false;
      for (int64_t t = 0; t < n_tokens && !any; ++t) any = alpha[t * lda + r] != 0.0f;
      if (!any) continue;
      if (axpy_row) {
        for (int64_t t = 0; t < n_tokens; ++t) {
          const float a = alpha[t * lda + r];
          if (a != 0.0f) axpy_row(a, Row(w, r) + offset, out + t * ldo + c0, len);
        }
        continue;
      }
      DequantizeRow(w.type, Row(w, r) + offset, buf, len);
      for (int64_t t = 0; t < n_tokens; ++t) {
        const float a = alpha[t * lda + r];
        if (a != 0.0f) axpy(a, buf, out + t * ldo + c0, len);
      }
    }
  };
  if (pool && tasks > 1) {
    pool->ParallelFor(tasks, run);
  } else {
    for (int64_t t = 0; t < tasks; ++t) run(t, 0);
  }
}

void RoundToVecDotType(TensorType weight_type, float* x, int64_t n) {
  const TensorType act = VecDotType(weight_type);
  if (act == TensorType::kF32) return;
  thread_local std::vector<uint8_t> buf;
  buf.resize(std::max(buf.size(), RowBytes(act, n)));
  QuantizeActivationRow(act, x, buf.data(), n);
  DequantizeRow(act, buf.data(), x, n);
}

bool AccumulatesRows(TensorType type) {
  return type == TensorType::kF32 || type == TensorType::kF16 || type == TensorType::kQ4_0 ||
         type == TensorType::kQ8_0;
}

}  // namespace sparrow::kernels
