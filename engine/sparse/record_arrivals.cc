#include "engine/sparse/record_arrivals.h"

#include <algorithm>

namespace sparrow {

void RecordArrivals::Reset(size_t expected) {
  expected_ = expected;
  taken_ = consumed_ = 0;
  if (landed_.size() < expected) landed_.resize(expected);
  if (failed_.size() < expected) failed_.resize(expected);
  n_landed_ = 0;
  n_failed_ = 0;
  arrived_ = 0;
  closed_ = false;
}

void RecordArrivals::Push(const int32_t* ks, size_t n, bool ok) {
  if (ok) {
    const size_t at = n_landed_.load(std::memory_order_relaxed);
    std::copy_n(ks, n, landed_.data() + at);
    n_landed_.store(at + n);
  } else {
    const size_t at = n_failed_.load(std::memory_order_relaxed);
    std::copy_n(ks, n, failed_.data() + at);
    n_failed_.store(at + n);
  }
  arrived_.fetch_add(n);
  Notify();
}

void RecordArrivals::Close() {
  closed_ = true;
  Notify();
}

void RecordArrivals::Notify() {
  // The consumer sets waiting_ before its last look at the counters (both sequentially
  // consistent), so either it sees this arrival or this sees it waiting.
  if (waiting_) {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  }
}

template <typename Pred>
void RecordArrivals::Wait(Pred pred) {
  for (int spin = 0; spin < 256; ++spin) {
    if (pred()) return;
  }
  std::unique_lock<std::mutex> lock(mu_);
  waiting_ = true;
  cv_.wait(lock, pred);
  waiting_ = false;
}

std::span<const int32_t> RecordArrivals::Take(size_t want) {
  for (;;) {
    if (consumed_ >= expected_ && taken_ == n_landed_.load()) return {};
    const size_t target = std::min(expected_, consumed_ + std::max<size_t>(want, 1));
    Wait([&] { return arrived_.load() >= target || closed_.load(); });
    // Close comes after the last Push: once it is seen, the counts are final.
    consumed_ = closed_.load() ? expected_ : arrived_.load();
    const size_t from = taken_;
    taken_ = n_landed_.load();
    if (taken_ > from) return {landed_.data() + from, taken_ - from};
    // Only failures arrived: wait for more.
  }
}

void RecordArrivals::WaitClosed() {
  Wait([&] { return closed_.load(); });
}

}  // namespace sparrow
