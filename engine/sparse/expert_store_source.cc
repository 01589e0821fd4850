#include "engine/sparse/expert_store_source.h"

#include <algorithm>

namespace sparrow {
namespace {

// Misses that find no cache slot are read into the store's own buffer for the step: a prefill
// that routes to every expert reads them this many bytes at a time, not all of a layer at once.
constexpr size_t kMaxStartBytes = size_t{64} << 20;

}  // namespace

StoreExpertSource::StoreExpertSource(std::shared_ptr<NeuronStore> store)
    : store_(std::move(store)),
      max_records_(std::max<size_t>(
          1, kMaxStartBytes / static_cast<size_t>(store_->layout().largest_record_bytes()))) {}

void StoreExpertSource::Start(int32_t il, std::span<const int32_t> records) {
  ptrs_.assign(records.size(), nullptr);
  store_->Start(il, records, ptrs_.data());
  first_ = true;
}

std::span<const int32_t> StoreExpertSource::Ready() {
  if (first_) {
    first_ = false;
    ready_.clear();
    const std::span<const int32_t> pending = store_->pending();
    for (size_t k = 0; k < ptrs_.size(); ++k) {
      if (std::find(pending.begin(), pending.end(), static_cast<int32_t>(k)) == pending.end()) {
        ready_.push_back(static_cast<int32_t>(k));
      }
    }
    if (!ready_.empty()) return ready_;
  }
  return store_->Arrived(1);
}

}  // namespace sparrow
