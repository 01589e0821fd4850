#pragma once
// A RequestSink that keeps every token and lets a test wait for the end.
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "engine/sched/request.h"

namespace sparrow::testing {

class CollectingSink : public RequestSink {
 public:
  bool OnToken(const TokenEvent& ev) override {
    std::lock_guard<std::mutex> lock(mu_);
    tokens_.push_back(ev.token);
    events_.push_back(ev);
    return true;
  }
  void OnFinish(const FinishInfo& info) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      info_ = info;
      done_ = true;
    }
    cv_.notify_all();
  }
  void OnEmbedding(std::vector<float> embedding) override {
    std::lock_guard<std::mutex> lock(mu_);
    embedding_ = std::move(embedding);
  }
  bool Cancelled() const override { return false; }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu_);
    return tokens_.size();
  }
  std::vector<int32_t> Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
    return tokens_;
  }
  // How it ended, once it has.
  FinishInfo WaitInfo() {
    Wait();
    std::lock_guard<std::mutex> lock(mu_);
    return info_;
  }
  // The same, with each token's logprobs.
  // An embedding request's vector, once it has ended (empty if none came).
  std::vector<float> WaitEmbedding() {
    Wait();
    std::lock_guard<std::mutex> lock(mu_);
    return embedding_;
  }
  std::vector<TokenEvent> WaitEvents() {
    Wait();
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int32_t> tokens_;
  std::vector<TokenEvent> events_;
  std::vector<float> embedding_;
  FinishInfo info_;
  bool done_ = false;
};

}  // namespace sparrow::testing
