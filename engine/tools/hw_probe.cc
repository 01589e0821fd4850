#include "engine/tools/hw_probe.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include "engine/kernels/matmul.h"
#include "engine/kernels/quantize.h"
#include "engine/kernels/sparse_ops.h"
#include "engine/kernels/thread_pool.h"
#include "engine/kernels/vec_dot.h"
#include "engine/tools/bench_bandwidth.h"
#include "engine/tools/bench_io.h"

namespace sparrow::tools {
namespace {

constexpr int64_t kCols = 4096;  // a 7B model's n_embd, and a multiple of every block size

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One type's rates at 1..max_threads.
Result<plan::KernelRate> MeasureKernel(TensorType type, const HwProbeOptions& o, int max_threads) {
  auto traits = GetTensorTypeTraits(type);
  if (!traits || !kernels::HasVecDot(type) || !kernels::CanQuantize(type)) {
    return InvalidArgument("profile-hw: no kernel measures weights of type " +
                           std::string(TensorTypeName(type)));
  }
  const uint64_t row_bytes = kCols / traits->block_elems * traits->block_bytes;
  const int64_t rows = std::max<int64_t>(256, static_cast<int64_t>(o.matrix_bytes / row_bytes));
  std::vector<uint8_t> data(row_bytes * static_cast<uint64_t>(rows));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(kCols), y(static_cast<size_t>(rows)), row(kCols);
  // A few distinct rows repeated: the values do not change the kernels' speed, the bytes do.
  for (int64_t r = 0; r < rows; ++r) {
    if (r < 16) {
      for (float& v : row) v = u(rng);
      kernels::QuantizeRow(type, row.data(), data.data() + r * row_bytes, kCols);
    } else {
      std::copy_n(data.data() + (r % 16) * row_bytes, row_bytes, data.data() + r * row_bytes);
    }
  }
  for (float& v : x) v = u(rng);
  const kernels::WeightMatrix w{type, data.data(), kCols, rows, row_bytes};
  // The sparse FFN's rows: a sorted random quarter, dot products (up) and accumulations (down).
  std::vector<const uint8_t*> picked;
  for (int64_t r = 0; r < rows; ++r) {
    if (rng() % 4 == 0) picked.push_back(data.data() + r * row_bytes);
  }
  std::vector<float> alpha(picked.size(), 0.5f), out(kCols, 0.0f);

  plan::KernelRate rate;
  rate.type = type;
  for (int t = 1; t <= max_threads; ++t) {
    kernels::ThreadPool pool(t);
    double dense = 1e30, gather = 1e30;
    for (int rep = 0; rep <= o.reps; ++rep) {  // rep 0 warms up
      auto t0 = std::chrono::steady_clock::now();
      kernels::MatMul(w, x.data(), 1, kCols, y.data(), rows, &pool);
      const double d = Seconds(t0);
      t0 = std::chrono::steady_clock::now();
      const auto n = static_cast<int64_t>(picked.size());
      kernels::MatMulRowPointers(type, kCols, picked.data(), n, x.data(), y.data(), &pool);
      kernels::AccumulateRowPointers(type, kCols, picked.data(), n, alpha.data(), out.data(),
                                     &pool);
      const double g = Seconds(t0);
      if (rep > 0) dense = std::min(dense, d), gather = std::min(gather, g);
    }
    rate.dense_bytes_per_s.push_back(static_cast<double>(data.size()) / dense);
    rate.gather_bytes_per_s.push_back(2.0 * static_cast<double>(picked.size() * row_bytes) /
                                      gather);
  }
  return rate;
}

}  // namespace

Result<plan::HardwareProfile> MeasureHardware(const HwProbeOptions& o) {
  plan::HardwareProfile hw;
  hw.max_threads = o.max_threads > 0
                       ? o.max_threads
                       : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (TensorType type : o.types) {
    SPARROW_ASSIGN_OR_RETURN(plan::KernelRate k, MeasureKernel(type, o, hw.max_threads));
    hw.kernels.push_back(std::move(k));
  }
  for (int t = 1; t <= hw.max_threads; ++t) {
    hw.memory_bytes_per_s.push_back(
        MeasureReadBandwidth(t, o.bandwidth_bytes, o.bandwidth_reps).best_bytes_per_s);
  }
  if (!o.flash_file.empty()) {
    IoBenchOptions io;
    io.path = o.flash_file;
    io.block_bytes = o.block_bytes;
    io.queue_depths = o.queue_depths;
    io.bytes_per_size = o.flash_bytes_per_size;
    auto report = RunIoBench(io);
    if (!report.ok()) return report.status().WithContext("profile-hw: flash probe");
    hw.flash_file = o.flash_file;
    for (const IoBenchRow& r : report->rows) {
      hw.flash.push_back({r.block_bytes, r.queue_depth, r.mib_per_s});
    }
  }
  SPARROW_RETURN_IF_ERROR(plan::ValidateHardwareProfile(hw, "measured profile"));
  return hw;
}

}  // namespace sparrow::tools
