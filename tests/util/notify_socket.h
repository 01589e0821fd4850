#pragma once
// The service manager's end of sd_notify(3) for tests: a unix datagram socket bound to a fresh
// abstract name (or a path), read with a deadline so that a test never hangs on a server that sends
// nothing. Not thread-safe: one reader.
#include <chrono>
#include <optional>
#include <string>

namespace sparrow::testing {

class NotifySocket {
 public:
  // Binds `path`, or when empty a fresh abstract name "@sparrow-notify-<pid>-<n>"; check ok().
  explicit NotifySocket(const std::string& path = "");
  ~NotifySocket();
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  bool ok() const { return fd_ >= 0; }
  // What NOTIFY_SOCKET must say: the path, or '@' and the abstract name.
  const std::string& name() const { return name_; }
  // Queues datagrams saying kFiller until the socket takes no more, so that a sender blocks in
  // its next send until Receive makes room: the sender stops exactly where it notifies. Returns
  // how many were queued.
  static constexpr const char* kFiller = "FILLER=1";
  int Fill();
  // The next datagram; nullopt when none arrives within `timeout`.
  std::optional<std::string> Receive(std::chrono::milliseconds timeout);
  // Datagrams until one equal to `state` (true), or none within `timeout` (false); every one
  // read but kFiller, the match included, is appended to `seen` (a line each) when given.
  bool WaitFor(const std::string& state, std::chrono::milliseconds timeout,
               std::string* seen = nullptr);

 private:
  int fd_ = -1;
  std::string name_;
};

}  // namespace sparrow::testing
