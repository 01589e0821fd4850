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
                          std::vector<int32_t>* failed) {
  const LayerBundles& lb = layout_.layers.at(layer);
  const uint64_t rec = lb.record_bytes;
  const uint64_t align = file_->alignment();
  order_.resize(ids.size());
  std::iota(order_.begin(), order_.end(), 0);
  std::sort(order_.begin(), order_.end(), [&](int32_t a, int32_t b) { return ids[a] < ids[b]; });
  const size_t per_read = std::max<size_t>(1, max_read_bytes_ / rec);
  Status first = Status::Ok();
  for (size_t i = 0; i < order_.size();) {
    // A run of adjacent records, at most per_read of them.
    size_t j = i + 1;
    while (j < order_.size() && j - i < per_read && ids[order_[j]] == ids[order_[j - 1]] + 1) ++j;
    const uint64_t begin = lb.file_offset + static_cast<uint64_t>(ids[order_[i]]) * rec;
    const uint64_t end = begin + (j - i) * rec;
    const uint64_t a0 = begin / align * align;
    // Converted files end on a whole block (GgufFileWriter pads them), so a1 stays inside.
    const uint64_t a1 = (end + align - 1) / align * align;
    uint8_t* buf = Bounce(static_cast<size_t>(a1 - a0));
    const uint64_t t0 = env_->NowMicros();
    Status st = buf ? file_->ReadAt(a0, static_cast<size_t>(a1 - a0), buf)
                    : ResourceExhausted("no memory for a read buffer of " +
                                        std::to_string(a1 - a0) + " bytes");
    const uint64_t micros = env_->NowMicros() - t0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.reads;
      stats_.bytes += a1 - a0;
      size_t b = 0;
      while (b < BundleReadStats::kBucketMicros.size() &&
             micros >= BundleReadStats::kBucketMicros[b]) {
        ++b;
      }
      ++stats_.latency[b];
      stats_.latency_micros += micros;
      if (st.ok()) {
        stats_.records += static_cast<int64_t>(j - i);
      } else {
        ++stats_.failed_reads;
      }
    }
    for (size_t k = i; k < j; ++k) {
      if (st.ok()) {
        std::memcpy(dst[order_[k]], buf + (begin - a0) + (k - i) * rec, rec);
      } else {
        failed->push_back(order_[k]);
      }
    }
    if (!st.ok() && first.ok()) first = st;
    i = j;
  }
  return first;
}

BundleReadStats BundleReader::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace sparrow
