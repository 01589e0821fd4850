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

bool AuthFailureLimiter::RecordFailure(const std::string& address, Clock::time_point now) {
  if (max_failures_ <= 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (failures_.size() >= kMaxAddresses && failures_.find(address) == failures_.end()) {
    // Forget addresses whose failures have all expired; if every one is recent, forget all:
    // a flood from many addresses must not grow memory without bound.
    for (auto it = failures_.begin(); it != failures_.end();) {
      Prune(it->second, now);
      it = it->second.empty() ? failures_.erase(it) : std::next(it);
    }
    if (failures_.size() >= kMaxAddresses) failures_.clear();
  }
  auto& q = failures_[address];
  Prune(q, now);
  q.push_back(now);
  return static_cast<int>(q.size()) == max_failures_;
}

}  // namespace sparrow::server
