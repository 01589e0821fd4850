#pragma once
// LatencyWindow: the most recent latency samples (a fixed ring), for percentiles over the last
// minute in the admin status; the Prometheus histograms keep the all-time distribution. Not
// thread-safe (Metrics guards it).
#include <array>
#include <chrono>
#include <cstddef>
#include <vector>

namespace sparrow::server {

struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0;
  size_t count = 0;  // samples the percentiles come from
};

class LatencyWindow {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kCapacity = 4096;

  void Add(double ms, Clock::time_point now = Clock::now());
  // Percentiles (nearest rank) of the samples newer than `span`.
  Percentiles Recent(std::chrono::seconds span, Clock::time_point now = Clock::now()) const;

 private:
  struct Sample {
    Clock::time_point at;
    double ms;
  };
  std::array<Sample, kCapacity> ring_{};
  size_t next_ = 0, size_ = 0;
};

}  // namespace sparrow::server
