#include "server/core/latency_window.h"

#include <algorithm>
#include <cmath>

namespace sparrow::server {

void LatencyWindow::Add(double ms, Clock::time_point now) {
  ring_[next_] = {now, ms};
  next_ = (next_ + 1) % kCapacity;
  size_ = std::min(size_ + 1, kCapacity);
}

Percentiles LatencyWindow::Recent(std::chrono::seconds span, Clock::time_point now) const {
  std::vector<double> v;
  v.reserve(size_);
  for (size_t i = 0; i < size_; ++i) {
    if (now - ring_[i].at <= span) v.push_back(ring_[i].ms);
  }
  Percentiles p;
  p.count = v.size();
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  auto rank = [&](double q) {
    const size_t r = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::clamp<size_t>(r, 1, v.size()) - 1];
  };
  p.p50 = rank(0.50);
  p.p90 = rank(0.90);
  p.p99 = rank(0.99);
  return p;
}

}  // namespace sparrow::server
