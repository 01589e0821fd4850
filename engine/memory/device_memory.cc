#include "engine/memory/device_memory.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
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

uint64_t DeviceMemoryOffer() {
  const uint64_t limit = DeviceMemoryLimit();
  uint64_t total = 0, available = 0;
  if (!ReadMemInfo("/proc/meminfo", &total, &available)) return limit;
  const uint64_t offer = available + ProcessAnonBytes();
  return limit > 0 ? std::min(limit, offer) : offer;
}

uint64_t ProcessResidentBytes() {
  std::ifstream in("/proc/self/statm");
  uint64_t pages_total = 0, pages_resident = 0;
  if (!(in >> pages_total >> pages_resident)) return 0;
  return pages_resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

uint64_t ProcessAnonBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("RssAnon:", 0) == 0) return std::stoull(line.substr(8)) << 10;
  }
  return 0;
}

uint64_t MappingResidentBytes(const void* address) {
  const auto at = reinterpret_cast<uintptr_t>(address);
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    // A mapping's header: "start-end perms offset dev inode [path]", addresses in hex.
    unsigned long long start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx ", &start, &end) == 2 &&
        line.find('-') < line.find(' ')) {
      inside = at >= start && at < end;
      continue;
    }
    if (inside && line.rfind("Rss:", 0) == 0) return std::stoull(line.substr(4)) << 10;
  }
  return 0;
}

}  // namespace sparrow
