#pragma once
// BundleReader: reads neuron bundles (the records of engine/model/neuron_bundles.h) of a
// converted file from flash into the caller's buffers: one read per run of adjacent records (hot
// neurons sit together, so a step's misses often are), aligned for O_DIRECT through a bounce
// buffer, all of a call's reads issued at once (the file's queue depth: io_uring). A failed read
// fails only the records it carried. Read() has one caller at a time (the
// I/O thread); stats() may be called from any thread.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "engine/common/env.h"
#include "engine/model/neuron_bundles.h"

namespace sparrow {

struct BundleReadStats {
  int64_t reads = 0;         // read calls issued
  int64_t records = 0;       // records delivered
  int64_t failed_reads = 0;  // reads that returned an error
  uint64_t bytes = 0;        // bytes read from the file (alignment padding included)
  // Read latency histogram: counts of reads under 50, 100, 200, 500 us, 1, 2, 5, 10 ms, and above.
  static constexpr std::array<uint64_t, 8> kBucketMicros = {50,   100,  200,  500,
                                                            1000, 2000, 5000, 10000};
  std::array<int64_t, kBucketMicros.size() + 1> latency{};
  uint64_t latency_micros = 0;  // sum over reads
};

class BundleReader {
 public:
  // `layout` must outlive the reader. Runs of adjacent records are read `max_read_bytes` at most
  // at a time.
  BundleReader(const NeuronBundleLayout& layout, std::unique_ptr<RandomAccessFile> file,
               Env* env = Env::Default(), size_t max_read_bytes = size_t{1} << 20);
  ~BundleReader();

  const RandomAccessFile& file() const { return *file_; }

  // Hears of records as their read completes (on the reading thread): `n` indices into ids, and
  // whether they were read (their dst then holds them) or failed.
  using RecordsDoneFn = std::function<void(const int32_t* ks, size_t n, bool ok)>;

  // Reads the records `ids` (distinct, any order) of `layer` into dst[k], record_bytes each.
  // Records whose read failed are listed in `failed` (indices into ids); the first error is
  // returned, naming the file and offset. The other records are delivered, each announced to
  // `on_records` (may be empty) as soon as it is in place.
  Status Read(int32_t layer, std::span<const int32_t> ids, uint8_t* const* dst,
              std::vector<int32_t>* failed, const RecordsDoneFn& on_records = {});

  BundleReadStats stats() const;

 private:
  // A buffer of at least n bytes aligned for the file.
  uint8_t* Bounce(size_t n);

  const NeuronBundleLayout& layout_;
  std::unique_ptr<RandomAccessFile> file_;
  Env* env_;
  size_t max_read_bytes_;
  uint8_t* bounce_ = nullptr;
  size_t bounce_size_ = 0;
  struct Run {
    size_t first, last;  // records order_[first..last)
    uint64_t skip;       // bytes of alignment before the first record in the read
    size_t bounce;       // offset of the read in the bounce buffer, or kInPlace
  };
  static constexpr size_t kInPlace = SIZE_MAX;  // read straight into the destination
  // Adds the batch in requests_ to stats_.
  void Account();
  std::vector<int32_t> order_;
  std::vector<Run> runs_;
  std::vector<ReadRequest> requests_;
  mutable std::mutex mu_;  // guards stats_
  BundleReadStats stats_;
};

}  // namespace sparrow
