#include "engine/kernels/thread_pool.h"

#include <algorithm>

#include "engine/common/check.h"

namespace sparrow::kernels {
namespace {

// Index of this thread inside the pool job it is running, or -1 outside any job.
thread_local int tls_thread_index = -1;

// Spinning covers the short gaps between the many small jobs of one forward pass; after that
// the thread sleeps so an idle engine costs no CPU.
constexpr int kSpinIterations = 2000;

constexpr uint64_t kClosed = 0xffffffffu;  // claim index of a finished job

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Waits until `v` differs from `old`; returns the new value.
template <typename T>
T WaitForChange(const std::atomic<T>& v, T old) {
  for (int i = 0; i < kSpinIterations; ++i) {
    const T now = v.load(std::memory_order_acquire);
    if (now != old) return now;
    CpuRelax();
  }
  T now;
  while ((now = v.load(std::memory_order_acquire)) == old) v.wait(old, std::memory_order_acquire);
  return now;
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
  workers_.reserve(n_threads_ - 1);
  active_.store(n_threads_, std::memory_order_relaxed);
  for (int t = 1; t < n_threads_; ++t) workers_.emplace_back([this, t] { WorkerLoop(t); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(run_mutex_);
    stop_.store(true, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
    // Parked workers wait for the count to change.
    active_.store(n_threads_ + 1, std::memory_order_release);
    active_.notify_all();
  }
  for (std::thread& w : workers_) w.join();
}

void ThreadPool::RunTasks(uint32_t job, int thread) {
  const int saved = tls_thread_index;
  tls_thread_index = thread;
  uint64_t c = claim_.load(std::memory_order_acquire);
  for (;;) {
    if (static_cast<uint32_t>(c >> 32) != job) break;
    const uint64_t index = c & 0xffffffffu;
    // n_tasks_ is a hint here: a stale value can only make the claim below fail.
    if (static_cast<int64_t>(index) >= n_tasks_.load(std::memory_order_acquire)) break;
    if (!claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire))
      continue;
    fn_(ctx_, static_cast<int64_t>(index), thread);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
    c = claim_.load(std::memory_order_acquire);
  }
  tls_thread_index = saved;
}

void ThreadPool::set_active_threads(int n) {
  active_.store(std::clamp(n, 1, n_threads_), std::memory_order_release);
  active_.notify_all();
}

void ThreadPool::WorkerLoop(int thread) {
  uint32_t seen = 0;
  for (;;) {
    // Parked while left out: asleep, not spinning on every job.
    for (int active = active_.load(std::memory_order_acquire);
         thread >= active && !stop_.load(std::memory_order_relaxed);
         active = active_.load(std::memory_order_acquire)) {
      active_.wait(active, std::memory_order_acquire);
      seen = generation_.load(std::memory_order_acquire);  // jobs issued meanwhile are done
    }
    if (stop_.load(std::memory_order_relaxed)) return;
    seen = WaitForChange(generation_, seen);
    if (stop_.load(std::memory_order_relaxed)) return;
    if (thread >= active_.load(std::memory_order_acquire)) continue;
    RunTasks(seen, thread);
  }
}

void ThreadPool::Run(int64_t n_tasks, TaskFn fn, void* ctx) {
  if (n_tasks <= 0) return;
  if (tls_thread_index >= 0 || n_threads_ == 1 || n_tasks == 1 ||
      active_.load(std::memory_order_relaxed) == 1) {
    const int thread = tls_thread_index >= 0 ? tls_thread_index : 0;
    for (int64_t t = 0; t < n_tasks; ++t) fn(ctx, t, thread);
    return;
  }
  SPARROW_CHECK(n_tasks < static_cast<int64_t>(kClosed));
  std::lock_guard<std::mutex> lock(run_mutex_);
  const uint32_t job = ++job_seq_;
  // The previous job's claim word is closed, so nobody reads these fields until the new claim
  // word is published below.
  fn_ = fn;
  ctx_ = ctx;
  pending_.store(n_tasks, std::memory_order_relaxed);
  n_tasks_.store(n_tasks, std::memory_order_release);
  claim_.store(static_cast<uint64_t>(job) << 32, std::memory_order_release);
  generation_.store(job, std::memory_order_release);
  generation_.notify_all();
  RunTasks(job, 0);
  int64_t left = pending_.load(std::memory_order_acquire);
  while (left != 0) left = WaitForChange(pending_, left);
  // Close the job before any field of the next one is written: a worker still holding this
  // job's claim word then fails its compare-and-swap.
  claim_.store((static_cast<uint64_t>(job) << 32) | kClosed, std::memory_order_relaxed);
  n_tasks_.store(0, std::memory_order_release);
}

}  // namespace sparrow::kernels
