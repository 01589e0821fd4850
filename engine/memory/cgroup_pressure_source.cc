// cgroup v1 memory pressure notifications (Documentation/admin-guide/cgroup-v1/memory.rst,
// "Memory Pressure"): writing "<eventfd> <fd of memory.pressure_level> <level>" to
// cgroup.event_control makes the eventfd count each event at that level or above.
#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "engine/common/env.h"
#include "engine/memory/cgroup_headroom.h"
#include "engine/memory/pressure_source.h"

namespace sparrow {
namespace {

// "low" fires as soon as the cgroup reclaims at all, page cache included: the early warning
// that leaves time to give memory back before "critical", when the OOM killer is close (a hog
// growing at 20 MB/s outran a cache that waited for "medium": tests/server/
// sparrowd_squeeze_test.cc). Near the limit it also fires for the server's own mapped weights;
// then shrinking the cache is the right answer too.
constexpr std::array<std::pair<const char*, PressureLevel>, 3> kLevels = {{
    {"low", PressureLevel::kLow},
    {"medium", PressureLevel::kMedium},
    {"critical", PressureLevel::kCritical},
}};

class CgroupV1PressureSource : public PressureSource {
 public:
  CgroupV1PressureSource(std::string dir, int level_fd, std::array<int, kLevels.size()> events,
                         uint64_t limit)
      : dir_(std::move(dir)),
        level_fd_(level_fd),
        events_(events),
        limit_(limit),
        failcnt_(ReadCgroupNumber(dir_ + "/memory.failcnt")) {}
  ~CgroupV1PressureSource() override {
    for (int fd : events_) close(fd);
    close(level_fd_);
  }
  std::string_view name() const override { return "cgroup-v1"; }
  std::vector<pollfd> fds() const override {
    std::vector<pollfd> v;
    for (int fd : events_) v.push_back({fd, POLLIN, 0});
    return v;
  }
  PressureReading Read(int fired) override {
    // A listener hears its level and every level above, so the highest that fired is the one.
    PressureLevel level = PressureLevel::kNone;
    for (size_t i = 0; i < events_.size(); ++i) {
      uint64_t count = 0;
      if (read(events_[i], &count, sizeof(count)) == sizeof(count) && count > 0) {
        level = std::max(level, kLevels[i].second);
      }
    }
    if (level != PressureLevel::kNone) {
      return {level, dir_ + "/memory.pressure_level: " + std::string(PressureLevelName(level))};
    }
    if (fired >= 0) return {};
    return Headroom();
  }
  uint64_t limit_bytes() const override { return limit_; }

  // On the tick, the headroom under the limit (cgroup_headroom.h). The limit can change while
  // serving (lowered by whoever owns the cgroup): read it each time.
  PressureReading Headroom() {
    limit_ = ReadCgroupLimit(dir_ + "/memory.limit_in_bytes");
    const uint64_t usage = ReadCgroupNumber(dir_ + "/memory.usage_in_bytes");
    const uint64_t inactive = ReadCgroupKey(dir_ + "/memory.stat", "total_inactive_file");
    PressureReading r = HeadroomReading(dir_, limit_, usage, inactive, &room_);
    // memory.failcnt counts the charges that met the limit: someone in the cgroup is being
    // held in reclaim now, whatever the inactive file pages make the headroom look like (a hog
    // stalled at the limit read as room, the cache grew into it, and the OOM killer came:
    // tests/server/sparrowd_squeeze_test.cc). As v2's memory.events "high": medium, no growth.
    const uint64_t failcnt = ReadCgroupNumber(dir_ + "/memory.failcnt");
    if (failcnt > failcnt_) {
      room_ = 0;
      if (r.level < PressureLevel::kMedium) {
        r = {PressureLevel::kMedium, dir_ + "/memory.failcnt: the limit was met " +
                                         std::to_string(failcnt - failcnt_) +
                                         " times since the last look"};
      }
    }
    failcnt_ = failcnt;
    return r;
  }
  std::optional<uint64_t> room_bytes() const override { return room_; }

 private:
  std::string dir_;
  int level_fd_;
  std::array<int, kLevels.size()> events_;
  uint64_t limit_;
  uint64_t failcnt_;  // counts from before the server started say nothing
  std::optional<uint64_t> room_;
};

}  // namespace

std::string FindMemoryCgroupV1(const std::string& proc_self_cgroup, const std::string& mount) {
  std::istringstream in(ReadSmallFileOrEmpty(proc_self_cgroup));
  std::string line;
  while (std::getline(in, line)) {
    // "4:memory:/some/path" (controllers may be listed together: "4:cpu,memory:/p").
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    std::stringstream controllers(line.substr(a + 1, b - a - 1));
    std::string c;
    while (std::getline(controllers, c, ',')) {
      if (c == "memory") {
        const std::string rel = line.substr(b + 1);
        return rel == "/" ? mount : mount + rel;
      }
    }
  }
  return "";
}

Result<std::unique_ptr<PressureSource>> OpenCgroupV1PressureSource(std::string dir) {
  if (dir.empty()) dir = FindMemoryCgroupV1();
  if (dir.empty()) return Unsupported("no cgroup v1 memory controller for this process");
  const std::string level_path = dir + "/memory.pressure_level";
  const int level_fd = open(level_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (level_fd < 0) return Unsupported(level_path + ": cannot open: " + std::strerror(errno));
  const std::string control_path = dir + "/cgroup.event_control";
  const int control = open(control_path.c_str(), O_WRONLY | O_CLOEXEC);
  if (control < 0) {
    const int err = errno;
    close(level_fd);
    return Unsupported(control_path + ": cannot open: " + std::strerror(err));
  }
  std::array<int, kLevels.size()> events{-1, -1, -1};
  Status st = Status::Ok();
  for (size_t i = 0; i < kLevels.size() && st.ok(); ++i) {
    events[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (events[i] < 0) {
      st = IoError(std::string("eventfd: ") + std::strerror(errno));
      break;
    }
    const std::string line =
        std::to_string(events[i]) + " " + std::to_string(level_fd) + " " + kLevels[i].first;
    if (write(control, line.c_str(), line.size()) < 0) {
      st = Unsupported(control_path + ": \"" + line + "\" refused: " + std::strerror(errno));
    }
  }
  close(control);
  if (!st.ok()) {
    for (int fd : events) {
      if (fd >= 0) close(fd);
    }
    close(level_fd);
    return st;
  }
  return std::unique_ptr<PressureSource>(std::make_unique<CgroupV1PressureSource>(
      dir, level_fd, events, ReadCgroupLimit(dir + "/memory.limit_in_bytes")));
}

}  // namespace sparrow
