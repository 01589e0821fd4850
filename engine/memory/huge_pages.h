#pragma once
// Transparent huge pages for the neuron store's anonymous memory. A decoded token touches one
// page per active record three times per layer; on 4 KiB pages those walks cost the store a
// fifth of its speed at a full cache (bench/RESULTS.md). Only 2 MiB pages wholly inside the
// bytes a consumer was granted are advised, so a fault never brings in memory past its budget.
#include <cstddef>

namespace sparrow {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// madvise(MADV_HUGEPAGE) over the 2 MiB-aligned pages wholly inside [begin, begin + bytes).
// Advice only: where the kernel has no THP, nothing changes.
void AdviseHugePages(void* begin, size_t bytes);

}  // namespace sparrow
