#pragma once
// SystemdNotifier: the service manager's notification protocol (sd_notify(3)), spoken without
// libsystemd: each state ("READY=1", "WATCHDOG=1", "STOPPING=1", "STATUS=...") is one datagram to
// the unix socket NOTIFY_SOCKET names, a path or an abstract name written with a leading '@'.
// Without NOTIFY_SOCKET (sparrowd started by hand) it is disabled and Send does nothing.
// Thread-safe: Send may be called from any thread.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "engine/common/result.h"

namespace sparrow::server {

class SystemdNotifier {
 public:
  using GetEnv = std::function<const char*(const char*)>;
  // Reads NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID. InvalidArgument, naming the variable,
  // when one is malformed (a socket name neither a path nor '@'-abstract, or too long; a
  // WATCHDOG_USEC that is not a positive number).
  static Result<SystemdNotifier> FromEnvironment(const GetEnv& getenv);

  bool enabled() const { return fd_ != nullptr; }
  // How often the manager wants WATCHDOG=1 at the latest (WATCHDOG_USEC); zero when it wants
  // none: no watchdog configured, no socket, or WATCHDOG_PID names another process.
  std::chrono::microseconds watchdog_interval() const { return watchdog_; }

  // Sends `state` (one or more "KEY=value" lines). IoError naming the socket when the manager
  // cannot be reached; Ok and nothing sent when disabled.
  Status Send(std::string_view state) const;

 private:
  std::shared_ptr<const int> fd_;  // the datagram socket, closed with the last copy
  std::string address_;            // sockaddr_un's sun_path bytes ('\0' first when abstract)
  std::string name_;               // NOTIFY_SOCKET as given, for messages
  std::chrono::microseconds watchdog_{0};
};

}  // namespace sparrow::server
