#pragma once
// ThreadPool: a fixed set of persistent worker threads that run ParallelFor jobs together with
// the calling thread (which is thread 0). Between jobs the workers spin briefly, then sleep. A
// job ends when its tasks are done: the caller never waits for a worker that has not woken up.
// Thread-safe: concurrent ParallelFor callers are serialized; a ParallelFor issued from inside a
// task runs inline on that thread (same thread index), so nesting cannot deadlock.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace sparrow::kernels {

class ThreadPool {
 public:
  // `n_threads` counts the caller: ThreadPool(1) starts no thread and runs everything inline.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // How many of the threads take part in jobs from now on (clamped to [1, size()]); the others
  // sleep until they are let back in, leaving their cores to the rest of the device. Thread
  // indices stay below size(). For the memory planner's thread count; thread-safe.
  void set_active_threads(int n);
  int active_threads() const { return active_.load(std::memory_order_relaxed); }

  // Calls fn(task, thread) exactly once for every task in [0, n_tasks), spread over the threads
  // (thread in [0, size())), and returns when all calls have returned. Tasks are handed out
  // dynamically, so which thread runs which task varies from call to call. n_tasks < 2^32.
  template <typename F>
  void ParallelFor(int64_t n_tasks, F&& fn) {
    using Fn = std::remove_reference_t<F>;
    Run(
        n_tasks,
        [](void* ctx, int64_t task, int thread) { (*static_cast<Fn*>(ctx))(task, thread); },
        const_cast<void*>(static_cast<const void*>(&fn)));
  }

 private:
  using TaskFn = void (*)(void* ctx, int64_t task, int thread);

  void Run(int64_t n_tasks, TaskFn fn, void* ctx);
  // Claims and runs tasks of job `job` until none is left or the job has changed.
  void RunTasks(uint32_t job, int thread);
  void WorkerLoop(int thread);

  const int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // one job at a time
  uint32_t job_seq_ = 0;  // guarded by run_mutex_

  // The current job. Tasks are claimed by compare-and-swap on claim_ = (job << 32) | next task,
  // so a worker that wakes late for an old job can never take a task of the next one; fn_ and
  // ctx_ are only read after a successful claim, while the job cannot complete.
  TaskFn fn_ = nullptr;
  void* ctx_ = nullptr;
  std::atomic<int64_t> n_tasks_{0};
  std::atomic<uint64_t> claim_{0};
  std::atomic<int64_t> pending_{0};      // tasks of the current job not finished yet
  std::atomic<uint32_t> generation_{0};  // wakes the workers: the latest job number
  std::atomic<bool> stop_{false};
  std::atomic<int> active_;  // workers with a lower index take part; set_active_threads
};

}  // namespace sparrow::kernels
