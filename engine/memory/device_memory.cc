#include "engine/memory/device_memory.h"

#include <algorithm>
#include <fstream>
#include <string>

#include "engine/memory/cgroup_headroom.h"
#include "engine/memory/pressure_source.h"

namespace sparrow {

namespace {

uint64_t MemTotal() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  uint64_t kb = 0;
  while (in >> key >> kb >> unit) {
    if (key == "MemTotal:") return kb * 1024;
  }
  return 0;
}

}  // namespace

uint64_t DeviceMemoryLimit() {
  uint64_t limit = MemTotal();
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
