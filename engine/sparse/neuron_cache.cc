#include "engine/sparse/neuron_cache.h"

#include <algorithm>
#include <cstring>

namespace sparrow {

NeuronCache::NeuronCache(int64_t n_layer, int64_t n_ff, size_t record_bytes, size_t capacity_bytes,
                         size_t chunk_bytes)
    : n_layer_(n_layer), n_ff_(n_ff), arena_(record_bytes, chunk_bytes, /*huge_pages=*/true) {
  slot_of_.assign(static_cast<size_t>(n_layer * n_ff), -1);
  // Memory refused here leaves an empty cache that bypasses (every bundle read for its step);
  // the budget controller's next Resize retries.
  (void)Resize(capacity_bytes);
}

void NeuronCache::Unlink(int32_t s) {
  Slot& x = slots_[s];
  if (x.queue == kNone) return;
  List& l = lists_[x.queue];
  if (x.prev >= 0) {
    slots_[x.prev].next = x.next;
  } else {
    l.head = x.next;
  }
  if (x.next >= 0) {
    slots_[x.next].prev = x.prev;
  } else {
    l.tail = x.prev;
  }
  --l.size;
  x.prev = x.next = -1;
  x.queue = kNone;
}

void NeuronCache::PushHead(Queue q, int32_t s) {
  List& l = lists_[q];
  Slot& x = slots_[s];
  x.queue = q;
  x.prev = -1;
  x.next = l.head;
  if (l.head >= 0) {
    slots_[l.head].prev = s;
  } else {
    l.tail = s;
  }
  l.head = s;
  ++l.size;
}

void NeuronCache::Balance() {
  while (active_.size * 10 > capacity_ * 9 && active_.tail >= 0) {
    const int32_t s = active_.tail;
    Unlink(s);
    PushHead(kInactive, s);
  }
}

void NeuronCache::Drop(int32_t s) {
  Slot& x = slots_[s];
  Unlink(s);
  slot_of_[x.key] = -1;
  x.key = -1;
  --used_;
  if (s < capacity_) free_.push_back(s);
}

bool NeuronCache::EvictOne() {
  for (const List* l : {&inactive_, &active_}) {
    for (int32_t s = l->tail; s >= 0; s = slots_[s].prev) {
      if (slots_[s].pins == 0) {
        Drop(s);
        ++evictions_;
        return true;
      }
    }
  }
  return false;
}

int32_t NeuronCache::TakeSlot() {
  if (capacity_ == 0) return -1;
  while (free_.empty()) {
    if (!EvictOne()) return -1;
  }
  const int32_t s = free_.back();
  free_.pop_back();
  return s;
}

int32_t NeuronCache::Admit(int64_t key) {
  const int32_t s = TakeSlot();
  if (s < 0) return -1;
  Slot& x = slots_[s];
  x.key = static_cast<int32_t>(key);
  x.pins = 1;
  ++pinned_;
  ++used_;
  slot_of_[key] = s;
  PushHead(kInactive, s);
  return s;
}

void NeuronCache::Compact() {
  bool pending = false;
  int64_t highest = -1;
  for (auto s = static_cast<int32_t>(slots_.size()) - 1; s >= capacity_; --s) {
    Slot& x = slots_[s];
    if (x.key < 0) continue;
    if (x.pins > 0) {
      pending = true;
      highest = std::max<int64_t>(highest, s);
      continue;
    }
    if (free_.empty()) {  // more bundles than capacity while pins blocked the eviction
      Drop(s);
      ++evictions_;
      continue;
    }
    // Move the bundle into a hole below the capacity, taking over its place in its queue.
    const int32_t d = free_.back();
    free_.pop_back();
    std::memcpy(arena_.slot(d), arena_.slot(s), arena_.slot_bytes());
    Slot& y = slots_[d];
    y = x;
    if (y.prev >= 0) {
      slots_[y.prev].next = d;
    } else {
      lists_[y.queue].head = d;
    }
    if (y.next >= 0) {
      slots_[y.next].prev = d;
    } else {
      lists_[y.queue].tail = d;
    }
    slot_of_[y.key] = d;
    x = Slot{};
  }
  // Chunks past the last bundle kept go back to the OS; shrinking cannot fail.
  (void)arena_.Reserve(std::max<int64_t>(capacity_, highest + 1));
  slots_.resize(static_cast<size_t>(arena_.capacity()));
  shrink_pending_ = pending;
}

Status NeuronCache::Resize(size_t capacity_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t want = std::min<int64_t>(static_cast<int64_t>(capacity_bytes / arena_.slot_bytes()),
                                         n_layer_ * n_ff_);
  if (want > capacity_) {
    if (want > arena_.capacity()) SPARROW_RETURN_IF_ERROR(arena_.Reserve(want));
    slots_.resize(static_cast<size_t>(arena_.capacity()));
    for (auto s = static_cast<int32_t>(capacity_); s < want; ++s) {
      if (slots_[s].key < 0) free_.push_back(s);
    }
    capacity_ = want;
  } else {
    capacity_ = want;
    std::erase_if(free_, [&](int32_t s) { return s >= capacity_; });
    while (used_ > capacity_ && EvictOne()) {
    }
  }
  capacity_bytes_ = capacity_bytes;
  Compact();
  return Status::Ok();
}

void NeuronCache::Acquire(int32_t layer, std::span<const int32_t> ids, uint8_t** records,
                          std::vector<int32_t>* misses) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t base = static_cast<int64_t>(layer) * n_ff_;
  for (size_t k = 0; k < ids.size(); ++k) {
    const int64_t key = base + ids[k];
    int32_t s = slot_of_[key];
    if (s >= 0) {
      ++hits_;
      if (slots_[s].pins++ == 0) ++pinned_;
      Unlink(s);
      PushHead(kActive, s);
      records[k] = arena_.slot(s);
      continue;
    }
    ++misses_;
    s = Admit(key);
    records[k] = s < 0 ? nullptr : arena_.slot(s);
    if (s < 0) {
      ++bypassed_;
    } else {
      misses->push_back(static_cast<int32_t>(k));
    }
  }
  Balance();
}

void NeuronCache::Reserve(int32_t layer, std::span<const int32_t> ids, uint8_t** records,
                          std::vector<int32_t>* misses) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t base = static_cast<int64_t>(layer) * n_ff_;
  for (size_t k = 0; k < ids.size(); ++k) {
    records[k] = nullptr;
    const int64_t key = base + ids[k];
    if (slot_of_[key] >= 0) continue;
    const int32_t s = Admit(key);
    if (s < 0) break;  // every slot pinned: the rest of the guess is not read
    records[k] = arena_.slot(s);
    misses->push_back(static_cast<int32_t>(k));
  }
  Balance();
}

void NeuronCache::Release(int32_t layer, std::span<const int32_t> ids,
                          std::span<uint8_t* const> records, std::span<const int32_t> failed) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t base = static_cast<int64_t>(layer) * n_ff_;
  auto unpin = [&](size_t k) {
    const int32_t s = slot_of_[base + ids[k]];
    if (s < 0 || slots_[s].pins == 0) return -1;
    if (--slots_[s].pins == 0) --pinned_;
    return s;
  };
  for (int32_t k : failed) {
    if (records[k] == nullptr) continue;
    const int32_t s = unpin(k);
    if (s >= 0 && slots_[s].pins == 0) Drop(s);  // its contents were never read
  }
  for (size_t k = 0; k < ids.size(); ++k) {
    if (records[k] == nullptr) continue;
    if (std::find(failed.begin(), failed.end(), static_cast<int32_t>(k)) != failed.end()) {
      continue;
    }
    unpin(k);
  }
  if (shrink_pending_) {
    while (used_ > capacity_ && EvictOne()) {
    }
    Compact();
  }
}

NeuronCacheStats NeuronCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  NeuronCacheStats st;
  st.hits = hits_;
  st.misses = misses_;
  st.evictions = evictions_;
  st.bypassed = bypassed_;
  st.used = used_;
  st.active = active_.size;
  st.inactive = inactive_.size;
  st.pinned = pinned_;
  st.capacity = capacity_;
  st.capacity_bytes = capacity_bytes_;
  st.mapped_bytes = arena_.mapped_bytes();
  st.held_bytes = std::min(st.mapped_bytes, static_cast<size_t>(used_) * arena_.slot_bytes());
  st.shrink_pending = shrink_pending_;
  return st;
}

bool NeuronCache::Contains(int32_t layer, int32_t neuron) const {
  std::lock_guard<std::mutex> lock(mu_);
  return slot_of_[static_cast<int64_t>(layer) * n_ff_ + neuron] >= 0;
}

}  // namespace sparrow
