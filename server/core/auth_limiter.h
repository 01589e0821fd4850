#pragma once
// AuthFailureLimiter: counts failed key checks per client address over a sliding window; an
// address that fails `max_failures` times is refused (before any key comparison) until its
// oldest failure leaves the window. Guessing a key over the LAN therefore costs a window per
// handful of tries. Memory is bounded: at most kMaxAddresses addresses are tracked, and when a
// flood from many addresses (cheap with IPv6 on a LAN) fills the table, the address with the
// fewest failures goes first: a locked address is forgotten only when every tracked one is
// locked, the one whose lock ends soonest. Thread-safe.
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>

namespace sparrow::server {

class AuthFailureLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kMaxAddresses = 4096;

  AuthFailureLimiter(int max_failures, std::chrono::seconds window)
      : max_failures_(max_failures), window_(window) {}

  // Seconds until `address` may try again (0: it may now).
  int64_t RetryAfterSeconds(const std::string& address, Clock::time_point now = Clock::now());
  // Records one failure; true when it is the one that reached the limit (log the lock once).
  bool RecordFailure(const std::string& address, Clock::time_point now = Clock::now());

  int max_failures() const { return max_failures_; }
  size_t tracked_addresses() const;
  std::chrono::seconds window() const { return window_; }

 private:
  void Prune(std::deque<Clock::time_point>& q, Clock::time_point now) const;
  // Makes room for one more address in a full table (mu_ held).
  void Evict(Clock::time_point now);

  const int max_failures_;
  const std::chrono::seconds window_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::deque<Clock::time_point>> failures_;  // guarded by mu_
};

}  // namespace sparrow::server
