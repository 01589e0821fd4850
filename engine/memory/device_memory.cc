#include "engine/memory/device_memory.h"

#include <algorithm>
#include <string>

#include "engine/memory/cgroup_headroom.h"
#include "engine/memory/pressure_source.h"

namespace sparrow {

uint64_t DeviceMemoryLimit() {
  uint64_t limit = 0, available = 0;
  ReadMemInfo("/proc/meminfo", &limit, &available);
  auto lower = [&](uint64_t l) {
    if (l > 0) limit = limit > 0 ? std::min(limit, l) : l;
  };
  if (const std::string v1 = FindMemoryCgroupV1(); !v1.empty()) {
    lower(ReadCgroupLimit(v1 + "/memory.limit_in_bytes"));
  }
  if (const std::string v2 = FindMemoryCgroupV2(); !v2.empty()) {
    lower(ReadCgroupLimit(v2 + "/memory.max"));
    lower(ReadCgroupLimit(v2 + "/memory.high"));
  }
  return limit;
}

}  // namespace sparrow
