#pragma once
// The flash read probe of `sparrow bench --io FILE`: random reads of each block size from a
// file through the Env (O_DIRECT where the file system has it, so the page cache does not
// answer), at each queue depth (reads in flight together through io_uring, as the bundle reader
// issues a step's misses). Throughput and latency by block size and depth tell which record
// size, read size and depth the storage favours.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/common/env.h"
#include "engine/common/result.h"

namespace sparrow::tools {

struct IoBenchOptions {
  std::string path;
  std::vector<uint64_t> block_bytes = {4096, 8192, 16384, 65536, 262144, 1048576};
  uint64_t bytes_per_size = uint64_t{64} << 20;  // read at each block size
  std::vector<int> queue_depths = {1, 4, 16, 64};
  bool direct = true;
  uint64_t seed = 1;
  Env* env = Env::Default();
};

struct IoBenchRow {
  uint64_t block_bytes = 0;
  int queue_depth = 1;
  std::string backend;  // "io_uring" or "pread" (depth 1, or io_uring refused)
  int64_t reads = 0;
  double mib_per_s = 0;
  double p50_us = 0, p99_us = 0;
};

struct IoBenchReport {
  std::string path;
  bool direct = false;  // O_DIRECT was granted
  uint64_t file_bytes = 0;
  std::vector<IoBenchRow> rows;
};

// Fails when the file cannot be opened or read, or is smaller than the largest block.
Result<IoBenchReport> RunIoBench(const IoBenchOptions& options);
std::string IoBenchTable(const IoBenchReport& report);
std::string IoBenchJson(const IoBenchReport& report);

}  // namespace sparrow::tools
