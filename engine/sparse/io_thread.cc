#include "engine/sparse/io_thread.h"

namespace sparrow {

IoThread::IoThread() : thread_([this] { Loop(); }) {}

IoThread::~IoThread() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void IoThread::Post(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_all();
}

void IoThread::Run(const std::function<void()>& job) {
  if (std::this_thread::get_id() == thread_.get_id()) {
    job();
    return;
  }
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool done = false;
  Post([&] {
    job();
    std::lock_guard<std::mutex> lock(done_mu);
    done = true;
    done_cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(done_mu);
  done_cv.wait(lock, [&] { return done; });
}

void IoThread::Loop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and nothing left
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

}  // namespace sparrow
