#include "server/core/service_watchdog.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "server/core/server_context.h"

namespace sparrow::server {

ServiceWatchdog::ServiceWatchdog(SystemdNotifier notifier, Health healthy)
    : notifier_(std::move(notifier)), healthy_(std::move(healthy)) {
  if (notifier_.watchdog_interval().count() > 0) thread_ = std::thread([this] { Run(); });
}

ServiceWatchdog::~ServiceWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void ServiceWatchdog::Run() {
  const auto period = notifier_.watchdog_interval() / 2;
  bool was_healthy = true;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    std::string why;
    const bool healthy = healthy_(&why);
    if (healthy) {
      if (Status st = notifier_.Send("WATCHDOG=1"); !st.ok()) {
        spdlog::warn("watchdog: {}", st.ToString());
      }
      if (!was_healthy) spdlog::info("watchdog: healthy again, pings resume");
    } else if (was_healthy) {
      // Said once per episode: the manager acts on the silence, the log says why.
      spdlog::error("watchdog: not pinging the service manager: {}", why);
    }
    was_healthy = healthy;
    lock.lock();
    cv_.wait_for(lock, period, [this] { return stop_; });
  }
}

ServiceWatchdog::Health SchedulerProgress(const ServerContext& ctx,
                                          std::chrono::microseconds limit) {
  return [&ctx, limit](std::string* why) {
    const auto served = ctx.served();
    if (!served || !served->scheduler) return true;  // between models: nothing to watch
    const auto age = served->scheduler->IterationAge();
    if (age < limit) return true;
    *why = "the scheduler has been in one step for " +
           std::to_string(std::chrono::duration_cast<std::chrono::seconds>(age).count()) +
           " s (the limit is WATCHDOG_USEC, " +
           std::to_string(std::chrono::duration_cast<std::chrono::seconds>(limit).count()) + " s)";
    return false;
  };
}

}  // namespace sparrow::server
