#pragma once
// ServiceWatchdog: tells the service manager the server is alive, "WATCHDOG=1" every half of
// WATCHDOG_USEC (as sd_watchdog_enabled(3) advises), but only while `healthy` says so: when the
// server hangs the pings stop and the manager (systemd's WatchdogSec=) kills and restarts it.
// Thread-safe; the pinging thread ends with the object.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "server/core/systemd_notify.h"

namespace sparrow::server {

struct ServerContext;

class ServiceWatchdog {
 public:
  // Returns true when the server is healthy; otherwise false and, in `why`, what is wrong.
  using Health = std::function<bool(std::string* why)>;

  // Starts pinging; does nothing when the notifier wants no watchdog.
  ServiceWatchdog(SystemdNotifier notifier, Health healthy);
  ~ServiceWatchdog();
  ServiceWatchdog(const ServiceWatchdog&) = delete;
  ServiceWatchdog& operator=(const ServiceWatchdog&) = delete;

 private:
  void Run();

  SystemdNotifier notifier_;
  Health healthy_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

// The served model's scheduler makes progress: its step loop is waiting for work, or has been
// in its current iteration for less than `limit` (a step that long is a hang, not a slow step).
// Follows the model an admin reload swaps in.
ServiceWatchdog::Health SchedulerProgress(const ServerContext& ctx,
                                          std::chrono::microseconds limit);

}  // namespace sparrow::server
