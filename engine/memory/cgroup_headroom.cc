#include "engine/memory/cgroup_headroom.h"

#include <unistd.h>

#include <sstream>
#include <string>

#include "engine/common/env.h"

namespace sparrow {

PressureReading HeadroomReading(const std::string& where, uint64_t limit, uint64_t usage,
                                uint64_t inactive_file, std::optional<uint64_t>* room) {
  room->reset();
  if (limit == 0) return {};
  const uint64_t working = usage > inactive_file ? usage - inactive_file : 0;
  const uint64_t free = limit > working ? limit - working : 0;
  const uint64_t low_line = limit / 10;
  *room = free > low_line ? free - low_line : 0;
  const double share = static_cast<double>(free) / static_cast<double>(limit);
  PressureLevel level = PressureLevel::kNone;
  if (share < 0.03) {
    level = PressureLevel::kCritical;
  } else if (share < 0.06) {
    level = PressureLevel::kMedium;
  } else if (share < 0.10) {
    level = PressureLevel::kLow;
  }
  if (level == PressureLevel::kNone) return {};
  return {level, where + ": " + std::to_string(free >> 20) + " MiB of its " +
                     std::to_string(limit >> 20) + " MiB limit free"};
}

uint64_t ReadCgroupNumber(const std::string& file) {
  std::istringstream in(ReadSmallFileOrEmpty(file));
  uint64_t v = 0;
  in >> v;
  return v;
}

uint64_t ReadCgroupKey(const std::string& file, const std::string& key) {
  std::istringstream in(ReadSmallFileOrEmpty(file));
  std::string k;
  uint64_t v = 0;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return 0;
}

uint64_t ReadCgroupLimit(const std::string& file) {
  std::istringstream in(ReadSmallFileOrEmpty(file));
  uint64_t v = 0;
  if (!(in >> v)) return 0;  // "max", or unreadable
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0 && v >= static_cast<uint64_t>(pages) * static_cast<uint64_t>(page)) {
    return 0;
  }
  return v;
}

}  // namespace sparrow
