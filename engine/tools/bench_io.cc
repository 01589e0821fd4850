#include "engine/tools/bench_io.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>

namespace sparrow::tools {

Result<IoBenchReport> RunIoBench(const IoBenchOptions& o) {
  SPARROW_ASSIGN_OR_RETURN(auto probe, o.env->OpenRandomAccess(o.path, o.direct));
  IoBenchReport report;
  report.path = o.path;
  report.direct = probe->direct();
  report.file_bytes = probe->size();
  const uint64_t largest = *std::max_element(o.block_bytes.begin(), o.block_bytes.end());
  if (probe->size() < largest) {
    return InvalidArgument(o.path + " has " + std::to_string(probe->size()) +
                           " bytes; the probe reads blocks of up to " + std::to_string(largest));
  }
  for (uint64_t block : o.block_bytes) {
    if (block == 0 || block % 4096 != 0) {
      return InvalidArgument("block size " + std::to_string(block) + " is not a multiple of 4096");
    }
  }
  const int deepest = *std::max_element(o.queue_depths.begin(), o.queue_depths.end());
  if (deepest < 1 || deepest > 4096) {
    return InvalidArgument("queue depth " + std::to_string(deepest) + " is outside 1..4096");
  }
  const size_t align = std::max<size_t>(probe->alignment(), 4096);
  const size_t slot = (largest + align - 1) / align * align;
  void* buf = std::aligned_alloc(align, slot * static_cast<size_t>(deepest));
  if (!buf) return ResourceExhausted("no memory for the read buffers");
  std::mt19937_64 rng(o.seed);
  Status failed = Status::Ok();
  for (int depth : o.queue_depths) {
    auto file = o.env->OpenRandomAccess(o.path, FileOptions{o.direct, depth});
    if (!file.ok()) {
      failed = file.status();
      break;
    }
    for (uint64_t block : o.block_bytes) {
      const uint64_t slots = (*file)->size() / block;
      const int64_t n =
          std::max<int64_t>(8 * depth, static_cast<int64_t>(o.bytes_per_size / block));
      // One batch for all the reads, as the bundle reader hands over a layer's misses: the ring
      // tops up to `depth` as reads complete, where batches of `depth` would each wait for their
      // slowest read. Reads that share a buffer slot may be in flight together; their bytes are
      // never looked at.
      std::vector<ReadRequest> batch(static_cast<size_t>(n));
      for (size_t k = 0; k < batch.size(); ++k) {
        batch[k] = {(rng() % slots) * block, block,
                    static_cast<uint8_t*>(buf) + (k % static_cast<size_t>(depth)) * slot,
                    Status::Ok(), 0};
      }
      const uint64_t t0 = o.env->NowMicros();
      failed = (*file)->ReadBatch(batch);
      if (!failed.ok()) break;
      std::vector<double> micros;
      micros.reserve(batch.size());
      for (const ReadRequest& r : batch) micros.push_back(static_cast<double>(r.micros));
      const double seconds = std::max<double>(1e-6, (o.env->NowMicros() - t0) * 1e-6);
      std::sort(micros.begin(), micros.end());
      IoBenchRow row;
      row.block_bytes = block;
      row.queue_depth = depth;
      row.backend = std::string(depth > 1 ? (*file)->read_backend() : "pread");
      row.reads = n;
      row.mib_per_s = static_cast<double>(n) * block / seconds / (1 << 20);
      row.p50_us = micros[micros.size() / 2];
      row.p99_us = micros[std::min(micros.size() - 1, micros.size() * 99 / 100)];
      report.rows.push_back(row);
    }
    if (!failed.ok()) break;
  }
  std::free(buf);
  if (!failed.ok()) return failed;
  return report;
}

std::string IoBenchTable(const IoBenchReport& r) {
  std::string out = "flash read probe: " + r.path + " (" + std::to_string(r.file_bytes >> 20) +
                    " MiB, " +
                    (r.direct ? "O_DIRECT" : "buffered: O_DIRECT refused, page cache dropped") +
                    ", random offsets)\n";
  out +=
      "| block | depth | backend | reads | MiB/s | p50 us | p99 us |\n"
      "| ---: | ---: | --- | ---: | ---: | ---: | ---: |\n";
  for (const IoBenchRow& row : r.rows) {
    char line[200];
    std::snprintf(line, sizeof line, "| %llu KiB | %d | %s | %lld | %.1f | %.0f | %.0f |\n",
                  static_cast<unsigned long long>(row.block_bytes >> 10), row.queue_depth,
                  row.backend.c_str(), static_cast<long long>(row.reads), row.mib_per_s, row.p50_us,
                  row.p99_us);
    out += line;
  }
  return out;
}

std::string IoBenchJson(const IoBenchReport& r) {
  nlohmann::json j;
  j["path"] = r.path;
  j["direct"] = r.direct;
  j["file_bytes"] = r.file_bytes;
  j["rows"] = nlohmann::json::array();
  for (const IoBenchRow& row : r.rows) {
    j["rows"].push_back({{"block_bytes", row.block_bytes},
                         {"queue_depth", row.queue_depth},
                         {"backend", row.backend},
                         {"reads", row.reads},
                         {"mib_per_s", row.mib_per_s},
                         {"p50_us", row.p50_us},
                         {"p99_us", row.p99_us}});
  }
  return j.dump();
}

}  // namespace sparrow::tools
