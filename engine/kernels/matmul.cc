#include "engine/kernels/matmul.h"

#include <algorithm>
#include <vector>

#include "engine/common/check.h"
#include "engine/kernels/dequantize.h"
#include "engine/kernels/thread_pool.h"
#include "engine/kernels/vec_dot.h"

namespace sparrow::kernels {
namespace {

// Reused across calls on the same thread, so steady-state MatMul calls do not allocate.
std::vector<uint8_t>& ActivationScratch(size_t bytes) {
  thread_local std::vector<uint8_t> scratch;
  if (scratch.size() < bytes) scratch.resize(bytes);
  return scratch;
}

// Row blocks handed out as tasks: several per thread so uneven threads even out, but large
// enough to amortize the task hand-out.
int64_t RowsPerTask(int64_t rows, int n_threads) {
  if (n_threads <= 1) return rows;
  const int64_t per = (rows + 4 * n_threads - 1) / (4 * n_threads);
  // Multiples of 4: the GEMM kernels work on 4-row tiles.
  return (std::max<int64_t>(per, 16) + 3) / 4 * 4;
}

void CheckShape(const WeightMatrix& w, int64_t n_tokens, int64_t ldx, int64_t ldy) {
  SPARROW_CHECK(HasVecDot(w.type));
  const auto traits = GetTensorTypeTraits(w.type);
  const auto act_traits = GetTensorTypeTraits(VecDotType(w.type));
  SPARROW_CHECK(w.cols > 0 && w.rows >= 0);
  SPARROW_CHECK(w.cols % traits->block_elems == 0 && w.cols % act_traits->block_elems == 0);
  SPARROW_CHECK(w.row_stride_bytes >= RowBytes(w.type, w.cols));
  SPARROW_CHECK(w.data != nullptr || w.rows == 0);
  SPARROW_CHECK(n_tokens >= 0 && ldx >= w.cols && ldy >= w.rows);
}

// The activations of a call in the form its kernel reads: the vec-dot type (or the GEMM
// kernel's packed form of it), one row per token, converted once per call into this thread's
// scratch. Unpacked F32 activations are read where they are.
struct PackedActivations {
  GemmKernel gemm;
  VecDotFn dot = nullptr;
  const uint8_t* act = nullptr;
  size_t stride = 0;
};

PackedActivations Pack(const WeightMatrix& w, const float* x, int64_t n_tokens, int64_t ldx,
                       ThreadPool* pool) {
  const KernelTable& kernels = ActiveKernelTable();
  const TensorType act_type = VecDotType(w.type);
  PackedActivations p;
  p.dot = kernels.vec_dot[static_cast<int>(w.type)];
  const GemmKernel& table_gemm = kernels.gemm[static_cast<int>(w.type)];
  p.gemm = n_tokens >= table_gemm.min_tokens ? table_gemm : GemmKernel{};
  p.act = reinterpret_cast<const uint8_t*>(x);
  p.stride = static_cast<size_t>(ldx) * sizeof(float);
  const bool packed = p.gemm.run != nullptr && p.gemm.pack_act != nullptr;
  if (packed || act_type != TensorType::kF32) {
    const QuantizeActFn quantize =
        packed ? p.gemm.pack_act : kernels.quantize_act[static_cast<int>(act_type)];
    p.stride = packed ? p.gemm.packed_row_bytes(w.cols) : RowBytes(act_type, w.cols);
    uint8_t* buf = ActivationScratch(p.stride * static_cast<size_t>(n_tokens)).data();
    const size_t stride = p.stride;
    auto quantize_row = [&](int64_t t, int) { quantize(x + t * ldx, buf + t * stride, w.cols); };
    if (pool && n_tokens > 1) {
      pool->ParallelFor(n_tokens, quantize_row);
    } else {
      for (int64_t t = 0; t < n_tokens; ++t) quantize_row(t, 0);
    }
    p.act = buf;
  }
  return p;
}

}  // namespace

void MatMul(const WeightMatrix& w, const float* x, int64_t n_tokens, int64_t ldx, float* y,
            int64_t ldy, ThreadPool* pool) {
  CheckShape(w, n_tokens, ldx, ldy);
  if (n_tokens == 0 || w.rows == 0) return;
  const int n_threads = pool ? pool->size() : 1;
  const PackedActivations p = Pack(w, x, n_tokens, ldx, pool);
  const GemmKernel& gemm = p.gemm;
  const VecDotFn dot = p.dot;
  const uint8_t* act = p.act;
  const size_t act_stride = p.stride;

  const auto* wdata = static_cast<const uint8_t*>(w.data);
  const int64_t per_task = RowsPerTask(w.rows, n_threads);
  const int64_t n_tasks = (w.rows + per_task - 1) / per_task;
  auto rows_task = [&](int64_t task, int) {
    const int64_t r0 = task * per_task;
    const int64_t r_end = std::min(w.rows, r0 + per_task);
    if (gemm.run != nullptr) {
      gemm.run(wdata + static_cast<size_t>(r0) * w.row_stride_bytes, w.row_stride_bytes, r_end - r0,
               act, act_stride, n_tokens, w.cols, y + r0, ldy);
      return;
    }
    for (int64_t r = r0; r < r_end; ++r) {
      const uint8_t* wrow = wdata + static_cast<size_t>(r) * w.row_stride_bytes;
      for (int64_t t = 0; t < n_tokens; ++t)
        y[t * ldy + r] = dot(wrow, act + t * act_stride, w.cols);
    }
  };
  if (pool && n_tasks > 1) {
    pool->ParallelFor(n_tasks, rows_task);
  } else {
    for (int64_t task = 0; task < n_tasks; ++task) rows_task(task, 0);
  }
}

void MatMulRows(const WeightMatrix& w, const int32_t* rows, int64_t n, const float* x, float* y,
                ThreadPool* pool) {
  CheckShape(w, 1, w.cols, w.rows);
  if (n == 0) return;
  const PackedActivations p = Pack(w, x, 1, w.cols, nullptr);
  const auto* wdata = static_cast<const uint8_t*>(w.data);
  constexpr int64_t kPerTask = 32;
  auto task = [&](int64_t t, int) {
    const int64_t end = std::min(n, (t + 1) * kPerTask);
    if (p.gemm.gather != nullptr) {
      const uint8_t* ptrs[kPerTask];
      for (int64_t k = t * kPerTask; k < end; ++k) {
        SPARROW_CHECK(rows[k] >= 0 && rows[k] < w.rows);
        ptrs[k - t * kPerTask] = wdata + static_cast<size_t>(rows[k]) * w.row_stride_bytes;
      }
      p.gemm.gather(ptrs, end - t * kPerTask, p.act, w.cols, y + t * kPerTask);
      return;
    }
    for (int64_t k = t * kPerTask; k < end;) {
      // A run of consecutive rows goes to the kernel as one block of rows.
      int64_t run = 1;
      while (k + run < end && rows[k + run] == rows[k] + run) ++run;
      SPARROW_CHECK(rows[k] >= 0 && rows[k] + run <= w.rows);
      const uint8_t* wrow = wdata + static_cast<size_t>(rows[k]) * w.row_stride_bytes;
      if (p.gemm.run != nullptr) {
        p.gemm.run(wrow, w.row_stride_bytes, run, p.act, p.stride, 1, w.cols, y + k, run);
      } else {
        for (int64_t r = 0; r < run; ++r)
          y[k + r] = p.dot(wrow + static_cast<size_t>(r) * w.row_stride_bytes, p.act, w.cols);
      }
      k += run;
    }
  };
  const int64_t tasks = (n + kPerTask - 1) / kPerTask;
  if (pool && tasks > 1) {
    pool->ParallelFor(tasks, task);
  } else {
    for (int64_t t = 0; t < tasks; ++t) task(t, 0);
  }
}

void MatMulRowPointers(TensorType type, int64_t cols, const uint8_t* const* rows, int64_t n,
                       const float* x, float* y, ThreadPool* pool) {
  const WeightMatrix w{type, nullptr, cols, 0, RowBytes(type, cols)};
  CheckShape(w, 1, cols, 0);
  if (n == 0) return;
  const PackedActivations p = Pack(w, x, 1, cols, nullptr);
  constexpr int64_t kPerTask = 32;
  auto task = [&](int64_t t, int) {
    const int64_t k0 = t * kPerTask, end = std::min(n, k0 + kPerTask);
    if (p.gemm.gather != nullptr) {
      p.gemm.gather(rows + k0, end - k0, p.act, cols, y + k0);
      return;
    }
    for (int64_t k = k0; k < end; ++k) {
      if (p.gemm.run != nullptr) {
        p.gemm.run(rows[k], RowBytes(type, cols), 1, p.act, p.stride, 1, cols, y + k, 1);
      } else {
        y[k] = p.dot(rows[k], p.act, cols);
      }
    }
  };
  const int64_t tasks = (n + kPerTask - 1) / kPerTask;
  if (pool && tasks > 1) {
    pool->ParallelFor(tasks, task);
  } else {
    for (int64_t t = 0; t < tasks; ++t) task(t, 0);
  }
}

void GetRows(const WeightMatrix& w, const int32_t* ids, int64_t n, float* out) {
  SPARROW_CHECK(CanDequantize(w.type));
  SPARROW_CHECK(w.row_stride_bytes >= RowBytes(w.type, w.cols));
  const auto* data = static_cast<const uint8_t*>(w.data);
  for (int64_t i = 0; i < n; ++i) {
    SPARROW_CHECK(ids[i] >= 0 && ids[i] < w.rows);
    DequantizeRow(w.type, data + static_cast<size_t>(ids[i]) * w.row_stride_bytes, out + i * w.cols,
                  w.cols);
  }
}

}  // namespace sparrow::kernels
