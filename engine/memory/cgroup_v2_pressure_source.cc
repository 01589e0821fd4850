// cgroup v2 (Documentation/admin-guide/cgroup-v2.rst, "Memory Interface Files"): memory.events
// counts the times the cgroup went over memory.high (throttled into reclaim) and hit memory.max
// (reclaim at the hard limit, OOM next); the kernel wakes pollers of the file (POLLPRI) when a
// count moves. The limit the server lives under is the lower of memory.high and memory.max.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <string>

#include "engine/common/env.h"
#include "engine/memory/cgroup_headroom.h"
#include "engine/memory/pressure_source.h"

namespace sparrow {
namespace {

struct EventCounts {
  uint64_t high = 0, max = 0, oom = 0;
};

EventCounts ReadEvents(const std::string& file) {
  EventCounts c;
  c.high = ReadCgroupKey(file, "high");
  c.max = ReadCgroupKey(file, "max");
  c.oom = ReadCgroupKey(file, "oom");
  return c;
}

uint64_t LowerLimit(const std::string& dir) {
  const uint64_t high = ReadCgroupLimit(dir + "/memory.high");
  const uint64_t max = ReadCgroupLimit(dir + "/memory.max");
  if (high == 0) return max;
  if (max == 0) return high;
  return std::min(high, max);
}

class CgroupV2PressureSource : public PressureSource {
 public:
  CgroupV2PressureSource(std::string dir, int events_fd)
      : dir_(std::move(dir)),
        events_fd_(events_fd),
        seen_(ReadEvents(dir_ + "/memory.events")),
        limit_(LowerLimit(dir_)) {}
  ~CgroupV2PressureSource() override { close(events_fd_); }
  std::string_view name() const override { return "cgroup-v2"; }
  std::vector<pollfd> fds() const override { return {{events_fd_, POLLPRI, 0}}; }
  // The counts are read afresh on every wake-up and every tick: a notification only says that
  // the file changed, and the tick catches a change whose wake-up was missed.
  PressureReading Read(int /*fired*/) override {
    const EventCounts now = ReadEvents(dir_ + "/memory.events");
    PressureLevel level = PressureLevel::kNone;
    std::string what;
    if (now.max > seen_.max || now.oom > seen_.oom) {
      level = PressureLevel::kCritical;
      what = "memory.max reached";
    } else if (now.high > seen_.high) {
      level = PressureLevel::kMedium;
      what = "over memory.high";
    }
    seen_ = now;
    if (level != PressureLevel::kNone) {
      return {level, dir_ + "/memory.events: " + what};
    }
    limit_ = LowerLimit(dir_);
    const uint64_t usage = ReadCgroupNumber(dir_ + "/memory.current");
    const uint64_t inactive = ReadCgroupKey(dir_ + "/memory.stat", "inactive_file");
    return HeadroomReading(dir_, limit_, usage, inactive, &room_);
  }
  uint64_t limit_bytes() const override { return limit_; }
  std::optional<uint64_t> room_bytes() const override { return room_; }

 private:
  std::string dir_;
  int events_fd_;
  EventCounts seen_;
  uint64_t limit_;
  std::optional<uint64_t> room_;
};

}  // namespace

std::string FindMemoryCgroupV2(const std::string& proc_self_cgroup, const std::string& mount) {
  std::istringstream in(ReadSmallFileOrEmpty(proc_self_cgroup));
  std::string line;
  while (std::getline(in, line)) {
    // The unified hierarchy's line: "0::/some/path".
    if (line.rfind("0::", 0) != 0) continue;
    const std::string rel = line.substr(3);
    return rel == "/" ? mount : mount + rel;
  }
  return "";
}

Result<std::unique_ptr<PressureSource>> OpenCgroupV2PressureSource(std::string dir) {
  if (dir.empty()) dir = FindMemoryCgroupV2();
  if (dir.empty()) return Unsupported("no cgroup v2 hierarchy for this process");
  const std::string events = dir + "/memory.events";
  const int fd = open(events.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Unsupported(events +
                       ": cannot open (no memory controller here?): " + std::strerror(errno));
  }
  return std::unique_ptr<PressureSource>(std::make_unique<CgroupV2PressureSource>(dir, fd));
}

}  // namespace sparrow
