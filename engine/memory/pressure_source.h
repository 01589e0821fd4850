#pragma once
// PressureSource: one way the system says it wants memory back (PSI triggers, a cgroup's
// pressure events, MemAvailable). A PressureMonitor polls every source's descriptors on one
// thread and asks the source what a wake-up meant; sources without descriptors are asked on the
// monitor's tick. Not thread-safe: one monitor drives a source.
#include <poll.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/result.h"
#include "engine/memory/pressure_level.h"

namespace sparrow {

struct PressureReading {
  PressureLevel level = PressureLevel::kNone;
  std::string detail;  // what the source saw, for the log
};

class PressureSource {
 public:
  virtual ~PressureSource() = default;
  // "psi", "cgroup-v1", "meminfo": named in logs and metrics.
  virtual std::string_view name() const = 0;
  // Descriptors, each with the poll events that mean news (PSI triggers: POLLPRI only, as
  // they always read as POLLIN; eventfds: POLLIN); empty for a source asked on the tick.
  virtual std::vector<pollfd> fds() const = 0;
  // What the source says now: after `fired` (one of fds()) became ready, consuming its event;
  // on every tick with fired = -1 (sources with descriptors may have something to add).
  virtual PressureReading Read(int fired) = 0;
  // The most memory this process may use as the source knows it (a cgroup's limit), or 0.
  virtual uint64_t limit_bytes() const { return 0; }
  // What the process may still take, as of the last tick, before this source would report
  // pressure (a cgroup's headroom over its "low" margin, MemAvailable over its "medium" one);
  // nullopt where the source cannot tell (PSI). Growing back never takes more than this.
  virtual std::optional<uint64_t> room_bytes() const { return std::nullopt; }
};

// Linux PSI triggers on /proc/pressure/memory, as Android's lmkd sets them: a "some" stall of
// 70 ms per second is medium, a "full" stall of 700 ms per second critical. Unavailable (an
// error saying why) on kernels without PSI or where triggers are refused.
Result<std::unique_ptr<PressureSource>> OpenPsiPressureSource(
    const std::string& path = "/proc/pressure/memory");

// cgroup v1 memory.pressure_level of this process's memory cgroup (low, medium, critical), through
// cgroup.event_control and one eventfd per level, and on each tick the working set's headroom
// under the limit (under 10% free low, 6% medium, 3% critical). `cgroup_dir` empty: found from
// /proc/self/cgroup under /sys/fs/cgroup/memory. Its limit (memory.limit_in_bytes) is read at
// open.
Result<std::unique_ptr<PressureSource>> OpenCgroupV1PressureSource(std::string cgroup_dir = "");

// cgroup v2 of this process: memory.events (a rise of "max" or "oom" is critical, of "high"
// medium), polled for the kernel's change notification and read again on each tick, and the
// working set's headroom under the lower of memory.high and memory.max (as for v1). `cgroup_dir`
// empty: found from /proc/self/cgroup under /sys/fs/cgroup. Unsupported where the cgroup has no
// memory controller.
Result<std::unique_ptr<PressureSource>> OpenCgroupV2PressureSource(std::string cgroup_dir = "");

// MemAvailable from /proc/meminfo against MemTotal: under 10% medium, 5% critical (no "low": a
// desktop often sits under 20% and would squeeze the cache for good). The slow fallback, asked
// on the monitor's tick, watched only where neither PSI nor a cgroup is.
Result<std::unique_ptr<PressureSource>> OpenMemInfoPressureSource(
    const std::string& path = "/proc/meminfo");
// MemTotal and MemAvailable of a /proc/meminfo file, in bytes; false when either is missing.
bool ReadMemInfo(const std::string& path, uint64_t* total, uint64_t* available);

// This process's memory cgroup directory (v1), from /proc/self/cgroup; empty when it has none.
std::string FindMemoryCgroupV1(const std::string& proc_self_cgroup = "/proc/self/cgroup",
                               const std::string& mount = "/sys/fs/cgroup/memory");
// This process's cgroup directory in the unified (v2) hierarchy; empty when it has none.
std::string FindMemoryCgroupV2(const std::string& proc_self_cgroup = "/proc/self/cgroup",
                               const std::string& mount = "/sys/fs/cgroup");

}  // namespace sparrow
