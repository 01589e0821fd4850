#include "server/core/systemd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace sparrow::server {

namespace {

// A positive decimal number spanning all of `text`; 0 otherwise.
uint64_t ParsePositive(std::string_view text) {
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() ? value : 0;
}

}  // namespace

Result<SystemdNotifier> SystemdNotifier::FromEnvironment(const GetEnv& getenv) {
  SystemdNotifier n;
  const char* socket_name = getenv("NOTIFY_SOCKET");
  if (socket_name == nullptr || *socket_name == '\0') return n;
  n.name_ = socket_name;
  if (n.name_[0] != '/' && n.name_[0] != '@') {
    return InvalidArgument("NOTIFY_SOCKET '" + n.name_ +
                           "': expected an absolute path or an abstract name starting with '@'");
  }
  if (n.name_.size() > sizeof(sockaddr_un::sun_path) - 1) {
    return InvalidArgument("NOTIFY_SOCKET '" + n.name_ + "': longer than a unix socket name (" +
                           std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes)");
  }
  n.address_ = n.name_;
  if (n.address_[0] == '@') n.address_[0] = '\0';

  if (const char* usec = getenv("WATCHDOG_USEC"); usec != nullptr && *usec != '\0') {
    const uint64_t value = ParsePositive(usec);
    if (value == 0) {
      return InvalidArgument(std::string("WATCHDOG_USEC '") + usec +
                             "': expected a positive number of microseconds");
    }
    // WATCHDOG_PID is set when the manager watches one process among several it started.
    const char* pid = getenv("WATCHDOG_PID");
    if (pid == nullptr || *pid == '\0' || ParsePositive(pid) == static_cast<uint64_t>(getpid())) {
      n.watchdog_ = std::chrono::microseconds(value);
    }
  }

  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return IoError("NOTIFY_SOCKET '" + n.name_ + "': socket: " + std::strerror(errno));
  }
  n.fd_ = std::shared_ptr<const int>(new int(fd), [](const int* p) {
    close(*p);
    delete p;
  });
  return n;
}

Status SystemdNotifier::Send(std::string_view state) const {
  if (!fd_) return Status::Ok();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, address_.data(), address_.size());
  // An abstract name's length is exactly its bytes; a path's includes nothing past its end.
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address_.size());
  ssize_t sent = 0;
  do {
    sent = sendto(*fd_, state.data(), state.size(), MSG_NOSIGNAL,
                  reinterpret_cast<const sockaddr*>(&addr), len);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) {
    return IoError("NOTIFY_SOCKET '" + name_ + "': sending '" + std::string(state) +
                   "': " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace sparrow::server
