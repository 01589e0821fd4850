#include "engine/memory/slot_arena.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "engine/memory/huge_pages.h"

namespace sparrow {

SlotArena::SlotArena(size_t slot_bytes, size_t chunk_bytes, bool huge_pages)
    : slot_bytes_(std::max<size_t>(1, slot_bytes)), huge_pages_(huge_pages) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t slots = std::max<size_t>(1, (chunk_bytes + slot_bytes_ - 1) / slot_bytes_);
  slots_per_chunk_ = static_cast<int64_t>(slots);
  chunk_bytes_ = (slots * slot_bytes_ + page - 1) / page * page;
}

SlotArena::~SlotArena() {
  (void)Reserve(0);
}

Status SlotArena::Reserve(int64_t slots) {
  const size_t want =
      static_cast<size_t>((std::max<int64_t>(0, slots) + slots_per_chunk_ - 1) / slots_per_chunk_);
  while (chunks_.size() > want) {
    munmap(chunks_.back(), chunk_bytes_);
    chunks_.pop_back();
  }
  while (chunks_.size() < want) {
    void* p =
        mmap(nullptr, chunk_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      return ResourceExhausted("cannot map " + std::to_string(chunk_bytes_) +
                               " bytes for cache slots: " + std::strerror(errno));
    }
    // Huge pages only where every slot of the chunk is within what was reserved.
    const auto full = static_cast<int64_t>(chunks_.size() + 1) * slots_per_chunk_ <= slots;
    if (huge_pages_ && full) AdviseHugePages(p, chunk_bytes_);
    chunks_.push_back(static_cast<uint8_t*>(p));
  }
  return Status::Ok();
}

}  // namespace sparrow
