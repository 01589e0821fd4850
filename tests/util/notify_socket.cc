#include "tests/util/notify_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace sparrow::testing {

NotifySocket::NotifySocket(const std::string& path) {
  static std::atomic<int> counter{0};
  name_ = !path.empty()
              ? path
              : "@sparrow-notify-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  if (name_.size() >= sizeof(sockaddr_un::sun_path)) return;
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, name_.data(), name_.size());
  // Abstract: a NUL where the '@' is, and no terminator counted.
  if (name_[0] == '@') addr.sun_path[0] = '\0';
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name_.size() +
                                          (name_[0] == '@' ? 0 : 1));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    ::close(fd);
    return;
  }
  fd_ = fd;
}

NotifySocket::~NotifySocket() {
  if (fd_ >= 0) ::close(fd_);
}

int NotifySocket::Fill() {
  sockaddr_un self{};
  socklen_t len = sizeof self;
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&self), &len) != 0) return 0;
  // A sender also stops when its own send buffer is full: fresh senders until one can send
  // nothing, which only the receiver's full queue explains.
  int queued = 0;
  for (int senders = 0; senders < 1000; ++senders) {
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    int sent = 0;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&self), len) == 0) {
      const std::string filler = kFiller;
      while (::send(fd, filler.data(), filler.size(), MSG_DONTWAIT) > 0) ++sent;
    }
    ::close(fd);
    queued += sent;
    if (sent == 0) break;
  }
  return queued;
}

std::optional<std::string> NotifySocket::Receive(std::chrono::milliseconds timeout) {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return std::nullopt;
  char buf[4096];
  const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
  if (n < 0) return std::nullopt;
  return std::string(buf, static_cast<size_t>(n));
}

bool NotifySocket::WaitFor(const std::string& state, std::chrono::milliseconds timeout,
                           std::string* seen) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    const std::optional<std::string> got = Receive(left);
    if (!got) return false;
    if (seen && *got != kFiller) *seen += *got + "\n";
    if (*got == state) return true;
  }
}

}  // namespace sparrow::testing
