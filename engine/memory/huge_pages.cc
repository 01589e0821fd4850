#include "engine/memory/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace sparrow {

void AdviseHugePages(void* begin, size_t bytes) {
  const auto from = reinterpret_cast<uintptr_t>(begin);
  const uintptr_t first = (from + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  const uintptr_t last = (from + bytes) / kHugePageBytes * kHugePageBytes;
  if (last <= first) return;
  (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

}  // namespace sparrow
