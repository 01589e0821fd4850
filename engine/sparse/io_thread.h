#pragma once
// IoThread: the one thread that reads flash for a NeuronStore. A phone has one storage command
// queue, and PowerInfer-2 measured more I/O threads up to 40% slower; one thread keeping io_uring
// full while the compute threads work on what has arrived is its neuron-cluster pipeline. Jobs
// run one at a time, in the order posted.
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace sparrow {

class IoThread {
 public:
  IoThread();
  // Runs the jobs still queued, then joins.
  ~IoThread();
  IoThread(const IoThread&) = delete;
  IoThread& operator=(const IoThread&) = delete;

  // Queues `job`; it runs after every job posted before it.
  void Post(std::function<void()> job);
  // Runs `job` on the I/O thread after the queued ones and waits for it (inline when called from
  // the I/O thread itself).
  void Run(const std::function<void()>& job);

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the rest is built
};

}  // namespace sparrow
