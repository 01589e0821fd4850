#pragma once
// SlotArena: fixed-size slots in chunks mapped from the OS, grown and shrunk a whole chunk at a
// time so that shrinking really returns memory (munmap: RSS falls). The storage of consumers
// that are resized while serving: the neuron cache now, the KV pool next. Slot i lives in chunk
// i / slots_per_chunk() and keeps its address while it exists; shrinking drops the slots at the
// end, so an owner first moves the live ones it keeps into holes below the new count (LLM in a
// Flash: delete by moving the last into the hole). Not thread-safe; the owner serializes.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/common/status.h"

namespace sparrow {

class SlotArena {
 public:
  // `chunk_bytes` is rounded up to a whole number of slots and of pages. `huge_pages`: chunks
  // whose every slot is reserved get transparent huge pages (huge_pages.h), for slots read
  // scattered (the neuron cache's records); not for slots filled a little at a time (KV blocks),
  // where a 2 MiB fault would back slots that are not written yet.
  explicit SlotArena(size_t slot_bytes, size_t chunk_bytes = size_t{4} << 20,
                     bool huge_pages = false);
  ~SlotArena();
  SlotArena(const SlotArena&) = delete;
  SlotArena& operator=(const SlotArena&) = delete;

  size_t slot_bytes() const { return slot_bytes_; }
  int64_t slots_per_chunk() const { return slots_per_chunk_; }
  // Slots usable now: a whole number of chunks.
  int64_t capacity() const { return static_cast<int64_t>(chunks_.size()) * slots_per_chunk_; }
  size_t mapped_bytes() const { return chunks_.size() * chunk_bytes_; }

  // Maps or unmaps chunks so that capacity() is `slots` rounded up to whole chunks. Growing
  // fails (changing nothing more) when the OS refuses memory.
  Status Reserve(int64_t slots);

  uint8_t* slot(int64_t i) {
    return chunks_[i / slots_per_chunk_] + (i % slots_per_chunk_) * slot_bytes_;
  }

 private:
  size_t slot_bytes_;
  size_t chunk_bytes_;
  int64_t slots_per_chunk_;
  bool huge_pages_;
  std::vector<uint8_t*> chunks_;
};

}  // namespace sparrow
