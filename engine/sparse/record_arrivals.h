#pragma once
// RecordArrivals: how the I/O thread tells the step thread which records of a step have landed,
// so that compute can start on them while the rest is in flight. One producer (the I/O thread)
// and one consumer (the step thread) per round; a round is Reset by the consumer while no
// producer is active. No allocation per record: the lists are sized at Reset.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

namespace sparrow {

class RecordArrivals {
 public:
  // A new round of `expected` records (consumer; no producer active).
  void Reset(size_t expected);

  // Producer: `n` records (caller's indices) landed, or failed (`ok` false).
  void Push(const int32_t* ks, size_t n, bool ok);
  // Producer: nothing more comes this round (after the last Push, with the round's outcome
  // written where the consumer will look after WaitClosed).
  void Close();

  // Consumer: waits until `want` more records (or all the rest) have arrived and returns those
  // that landed since the last call (failed ones are left out: failed()). Empty once all have
  // arrived and been taken.
  std::span<const int32_t> Take(size_t want);
  // Consumer: waits for Close.
  void WaitClosed();
  // Consumer, after WaitClosed: the records that failed.
  std::span<const int32_t> failed() const { return {failed_.data(), n_failed_.load()}; }

 private:
  // Waits until pred() holds (spinning a little first: a record often lands within microseconds).
  template <typename Pred>
  void Wait(Pred pred);
  void Notify();

  size_t expected_ = 0;
  size_t taken_ = 0;     // consumer: entries of landed_ handed out
  size_t consumed_ = 0;  // consumer: arrivals (landed or failed) accounted for
  std::vector<int32_t> landed_, failed_;
  std::atomic<size_t> n_landed_{0}, n_failed_{0}, arrived_{0};
  std::atomic<bool> closed_{false}, waiting_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace sparrow
