#include "engine/sparse/bundle_reader.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>

namespace sparrow {

BundleReader::BundleReader(const NeuronBundleLayout& layout, std::unique_ptr<RandomAccessFile> file,
                           Env* env, size_t max_read_bytes)
    : layout_(layout), file_(std::move(file)), env_(env), max_read_bytes_(max_read_bytes) {}

BundleReader::~BundleReader() {
  std::free(bounce_);
}

uint8_t* BundleReader::Bounce(size_t n) {
  if (n > bounce_size_) {
    std::free(bounce_);
    const size_t align = std::max<size_t>(file_->alignment(), 64);
    bounce_size_ = (n + align - 1) / align * align;
    bounce_ = static_cast<uint8_t*>(std::aligned_alloc(align, bounce_size_));
    if (!bounce_) bounce_size_ = 0;
  }
  return bounce_;
}

Status BundleReader::Read(int32_t layer, std::span<const int32_t> ids, uint8_t* const* dst,
                          std::vector<int32_t>* failed, const RecordsDoneFn& on_records) {
  const LayerBundles& lb = layout_.layers.at(layer);
  const uint64_t rec = lb.record_bytes;
  const uint64_t align = file_->alignment();
  order_.resize(ids.size());
  std::iota(order_.begin(), order_.end(), 0);
  std::sort(order_.begin(), order_.end(), [&](int32_t a, int32_t b) { return ids[a] < ids[b]; });
  // An expert's record is hundreds of KiB at least: merging adjacent ones gains nothing, and
  // one read per expert fails only the expert (and the tokens routed to it) on an error.
  const size_t per_read = layout_.experts ? 1 : std::max<size_t>(1, max_read_bytes_ / rec);
  // Runs of adjacent records, at most per_read each, one read per run, issued a batch at a time
  // (the file keeps as many in flight as its queue depth allows; a batch's bounce buffer stays
  // under kBatchBytes).
  constexpr size_t kBatchBytes = size_t{16} << 20;
  Status first = Status::Ok();
  for (size_t i = 0; i < order_.size();) {
    runs_.clear();
    requests_.clear();
    size_t bounce = 0;
    while (i < order_.size() && (runs_.empty() || bounce < kBatchBytes)) {
      size_t j = i + 1;
      bool contiguous = true;  // destinations one record apart: the run can land in place
      while (j < order_.size() && j - i < per_read && ids[order_[j]] == ids[order_[j - 1]] + 1) {
        contiguous &= dst[order_[j]] == dst[order_[j - 1]] + rec;
        ++j;
      }
      const uint64_t begin = lb.file_offset + static_cast<uint64_t>(ids[order_[i]]) * rec;
      const uint64_t end = begin + (j - i) * rec;
      const uint64_t a0 = begin / align * align;
      // Converted files end on a whole block (GgufFileWriter pads them), so a1 stays inside.
      const uint64_t a1 = (end + align - 1) / align * align;
      const bool in_place = contiguous && a0 == begin && a1 == end &&
                            reinterpret_cast<uintptr_t>(dst[order_[i]]) % align == 0;
      runs_.push_back({i, j, begin - a0, in_place ? kInPlace : bounce});
      requests_.push_back({a0, static_cast<size_t>(a1 - a0), dst[order_[i]], Status::Ok(), 0});
      if (!in_place) bounce += static_cast<size_t>(a1 - a0);
      i = j;
    }
    uint8_t* buf = Bounce(bounce);
    if (!buf && bounce > 0) {
      for (const Run& run : runs_) {
        for (size_t k = run.first; k < run.last; ++k) failed->push_back(order_[k]);
        if (on_records) on_records(&order_[run.first], run.last - run.first, false);
      }
      if (first.ok()) {
        first = ResourceExhausted("no memory for a read buffer of " + std::to_string(bounce) +
                                  " bytes");
      }
      continue;
    }
    for (size_t r = 0; r < runs_.size(); ++r) {
      if (runs_[r].bounce != kInPlace) requests_[r].dst = buf + runs_[r].bounce;
    }
    // Each run's records are put in place and announced as its read completes, while the others
    // are still in flight.
    auto done = [&](size_t r) {
      const Run& run = runs_[r];
      const bool ok = requests_[r].status.ok();
      for (size_t k = run.first; k < run.last; ++k) {
        if (!ok) {
          failed->push_back(order_[k]);
        } else if (run.bounce != kInPlace) {
          std::memcpy(dst[order_[k]], buf + run.bounce + run.skip + (k - run.first) * rec, rec);
        }
      }
      if (on_records) on_records(&order_[run.first], run.last - run.first, ok);
    };
    Status st = file_->ReadBatch(requests_, done);
    if (!st.ok() && first.ok()) first = st;
    Account();
  }
  return first;
}

void BundleReader::Account() {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t r = 0; r < requests_.size(); ++r) {
    const ReadRequest& q = requests_[r];
    ++stats_.reads;
    stats_.bytes += q.n;
    size_t b = 0;
    while (b < BundleReadStats::kBucketMicros.size() &&
           q.micros >= BundleReadStats::kBucketMicros[b]) {
      ++b;
    }
    ++stats_.latency[b];
    stats_.latency_micros += q.micros;
    if (q.status.ok()) {
      stats_.records += static_cast<int64_t>(runs_[r].last - runs_[r].first);
    } else {
      ++stats_.failed_reads;
    }
  }
}

BundleReadStats BundleReader::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace sparrow
