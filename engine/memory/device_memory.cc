#include "engine/memory/device_memory.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>

#include "engine/common/env.h"
#include "engine/memory/cgroup_headroom.h"
#include "engine/memory/pressure_source.h"

namespace sparrow {

namespace {

// A process's smaps runs to a few MiB with thousands of mappings (thread stacks, arenas).
constexpr size_t kSmapsMaxBytes = size_t{256} << 20;

// The lower of two limits where 0 means none.
uint64_t Lower(uint64_t a, uint64_t b) {
  if (a == 0) return b;
  if (b == 0) return a;
  return std::min(a, b);
}

}  // namespace

uint64_t CgroupMemoryLimit(const std::string& proc_self_cgroup, const std::string& v1_mount,
                           const std::string& v2_mount) {
  uint64_t limit = 0;
  if (const std::string v1 = FindMemoryCgroupV1(proc_self_cgroup, v1_mount); !v1.empty()) {
    limit = Lower(limit, ReadCgroupLimit(v1 + "/memory.limit_in_bytes"));
  }
  if (const std::string v2 = FindMemoryCgroupV2(proc_self_cgroup, v2_mount); !v2.empty()) {
    limit = Lower(limit, ReadCgroupLimit(v2 + "/memory.max"));
    limit = Lower(limit, ReadCgroupLimit(v2 + "/memory.high"));
  }
  return limit;
}

uint64_t DeviceMemoryLimit() {
  uint64_t total = 0, available = 0;
  ReadMemInfo("/proc/meminfo", &total, &available);
  return Lower(total, CgroupMemoryLimit());
}

uint64_t DeviceMemoryOffer() {
  const uint64_t limit = DeviceMemoryLimit();
  uint64_t total = 0, available = 0;
  if (!ReadMemInfo("/proc/meminfo", &total, &available)) return limit;
  const uint64_t offer = available + ProcessAnonBytes();
  return limit > 0 ? std::min(limit, offer) : offer;
}

uint64_t ProcessResidentBytes() {
  std::istringstream in(ReadSmallFileOrEmpty("/proc/self/statm"));
  uint64_t pages_total = 0, pages_resident = 0;
  if (!(in >> pages_total >> pages_resident)) return 0;
  return pages_resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

uint64_t ProcessAnonBytes() {
  std::istringstream in(ReadSmallFileOrEmpty("/proc/self/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("RssAnon:", 0) == 0) return std::stoull(line.substr(8)) << 10;
  }
  return 0;
}

uint64_t MappingResidentBytes(const void* address) {
  const auto at = reinterpret_cast<uintptr_t>(address);
  std::istringstream in(ReadSmallFileOrEmpty("/proc/self/smaps", kSmapsMaxBytes));
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
