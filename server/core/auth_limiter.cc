#include "server/core/auth_limiter.h"

namespace sparrow::server {

void AuthFailureLimiter::Prune(std::deque<Clock::time_point>& q, Clock::time_point now) const {
  while (!q.empty() && now - q.front() >= window_) q.pop_front();
}

int64_t AuthFailureLimiter::RetryAfterSeconds(const std::string& address, Clock::time_point now) {
  if (max_failures_ <= 0) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = failures_.find(address);
  if (it == failures_.end()) return 0;
  Prune(it->second, now);
  if (static_cast<int>(it->second.size()) < max_failures_) return 0;
  const auto left = it->second.front() + window_ - now;
  return std::max<int64_t>(1, std::chrono::ceil<std::chrono::seconds>(left).count());
}

void AuthFailureLimiter::Evict(Clock::time_point now) {
  // Addresses whose failures have all expired go first, all of them (one scan serves many
  // later insertions).
  for (auto it = failures_.begin(); it != failures_.end();) {
    Prune(it->second, now);
    it = it->second.empty() ? failures_.erase(it) : std::next(it);
  }
  if (failures_.size() < kMaxAddresses) return;
  // Then the address with the fewest recent failures (the oldest first among equals): a flood
  // of fresh addresses evicts itself and leaves the addresses that came close to a lock, or
  // reached it. Among locked ones the lock that ends soonest goes.
  auto victim = failures_.begin();
  for (auto it = failures_.begin(); it != failures_.end(); ++it) {
    const auto& a = it->second;
    const auto& b = victim->second;
    if (a.size() < b.size() || (a.size() == b.size() && a.front() < b.front())) victim = it;
  }
  failures_.erase(victim);
}

size_t AuthFailureLimiter::tracked_addresses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failures_.size();
}

bool AuthFailureLimiter::RecordFailure(const std::string& address, Clock::time_point now) {
  if (max_failures_ <= 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (failures_.size() >= kMaxAddresses && failures_.find(address) == failures_.end()) {
    Evict(now);
  }
  auto& q = failures_[address];
  Prune(q, now);
  q.push_back(now);
  return static_cast<int>(q.size()) == max_failures_;
}

}  // namespace sparrow::server
