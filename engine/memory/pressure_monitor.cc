#include "engine/memory/pressure_monitor.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "engine/common/env.h"

namespace sparrow {
namespace {

// The monitor's clock: Env's steady clock, in milliseconds.
uint64_t NowMs() {
  return Env::Default()->NowMicros() / 1000;
}

}  // namespace

PressureMonitor::PressureMonitor(std::vector<std::unique_ptr<PressureSource>> sources, int tick_ms,
                                 EventFn on_event, TickFn on_tick)
    : sources_(std::move(sources)),
      tick_ms_(tick_ms > 0 ? tick_ms : 1000),
      on_event_(std::move(on_event)),
      on_tick_(std::move(on_tick)),
      stop_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      thread_([this] { Loop(); }) {}

PressureMonitor::~PressureMonitor() {
  const uint64_t one = 1;
  if (stop_fd_ >= 0) (void)!write(stop_fd_, &one, sizeof(one));
  thread_.join();
  if (stop_fd_ >= 0) close(stop_fd_);
}

std::vector<std::string> PressureMonitor::source_names() const {
  std::vector<std::string> names;
  for (const auto& s : sources_) names.emplace_back(s->name());
  return names;
}

void PressureMonitor::Loop() {
  std::vector<pollfd> fds;
  std::vector<PressureSource*> owner;
  for (const auto& s : sources_) {
    for (const pollfd& p : s->fds()) {
      fds.push_back(p);
      owner.push_back(s.get());
    }
  }
  fds.push_back({stop_fd_, POLLIN, 0});
  uint64_t next_tick = NowMs() + static_cast<uint64_t>(tick_ms_);
  for (;;) {
    const uint64_t now = NowMs();
    const int timeout = now >= next_tick ? 0 : static_cast<int>(next_tick - now);
    const int n = poll(fds.data(), fds.size(), timeout);
    if (n < 0 && errno != EINTR) {
      spdlog::error("memory pressure monitor: poll failed: {}; pressure is no longer watched",
                    std::strerror(errno));
      return;
    }
    if (fds.back().revents != 0) return;
    for (size_t i = 0; n > 0 && i + 1 < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      if ((fds[i].revents & fds[i].events) == 0) {
        // A descriptor that errors forever would spin the loop: stop watching it.
        spdlog::warn("memory pressure: {} stopped answering; no longer watched", owner[i]->name());
        fds[i].fd = -1;
        continue;
      }
      const PressureReading r = owner[i]->Read(fds[i].fd);
      if (r.level != PressureLevel::kNone) on_event_(owner[i]->name(), r);
    }
    if (NowMs() >= next_tick) {
      next_tick = NowMs() + static_cast<uint64_t>(tick_ms_);
      std::optional<uint64_t> room;
      for (const auto& s : sources_) {
        const PressureReading r = s->Read(-1);
        if (r.level != PressureLevel::kNone) on_event_(s->name(), r);
        if (auto mine = s->room_bytes()) room = room ? std::min(*room, *mine) : *mine;
      }
      if (on_tick_) on_tick_(room);
    }
  }
}

std::vector<std::unique_ptr<PressureSource>> DetectPressureSources() {
  std::vector<std::unique_ptr<PressureSource>> found;
  auto take = [&](Result<std::unique_ptr<PressureSource>> s, std::string_view what) {
    if (s.ok()) {
      spdlog::info("memory pressure: watching {}{}", what,
                   (*s)->limit_bytes() > 0
                       ? " (limit " + std::to_string((*s)->limit_bytes() >> 20) + " MiB)"
                       : std::string());
      found.push_back(std::move(s).value());
    } else {
      spdlog::info("memory pressure: no {}: {}", what, s.status().message());
    }
  };
  take(OpenPsiPressureSource(), "PSI triggers");
  const size_t before = found.size();
  take(OpenCgroupV1PressureSource(), "cgroup v1 pressure events");
  // A hybrid host has both hierarchies; the memory controller is in one of them.
  if (found.size() == before) take(OpenCgroupV2PressureSource(), "cgroup v2 memory events");
  // MemAvailable only where nothing better is: the kernel's own signals know reclaim from need.
  if (found.empty()) take(OpenMemInfoPressureSource(), "MemAvailable");
  return found;
}

}  // namespace sparrow
