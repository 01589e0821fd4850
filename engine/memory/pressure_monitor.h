#pragma once
// PressureMonitor: one thread that waits on every PressureSource's descriptors at once (poll)
// and hears what each wake-up meant; sources without descriptors (MemAvailable) and the caller's
// own timer run on its tick. A critical signal reaches on_event as soon as poll returns, well
// within the 100 ms a shrink must start in.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "engine/memory/pressure_source.h"

namespace sparrow {

class PressureMonitor {
 public:
  // `on_event` hears every reading above kNone, with its source's name; `on_tick` is called every
  // `tick_ms`, with the least room any source sees (PressureSource::room_bytes; nullopt when none
  // can tell). Both on the monitor's thread.
  using EventFn = std::function<void(std::string_view source, const PressureReading& reading)>;
  using TickFn = std::function<void(std::optional<uint64_t> room)>;
  PressureMonitor(std::vector<std::unique_ptr<PressureSource>> sources, int tick_ms,
                  EventFn on_event, TickFn on_tick);
  // Stops and joins.
  ~PressureMonitor();
  PressureMonitor(const PressureMonitor&) = delete;
  PressureMonitor& operator=(const PressureMonitor&) = delete;

  // The sources watched, by name.
  std::vector<std::string> source_names() const;

 private:
  void Loop();

  std::vector<std::unique_ptr<PressureSource>> sources_;
  const int tick_ms_;
  EventFn on_event_;
  TickFn on_tick_;
  int stop_fd_ = -1;  // an eventfd the destructor writes to
  std::thread thread_;
};

// The pressure sources this machine offers (PSI, the cgroup v1 memory controller; MemAvailable
// only where neither is), each tried and the outcome logged; what is missing is skipped.
std::vector<std::unique_ptr<PressureSource>> DetectPressureSources();

}  // namespace sparrow
