#include "engine/sched/mask_prefetch.h"

namespace sparrow {

MaskPrefetch::~MaskPrefetch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MaskPrefetch::Start(const StepPlan& plan) {
  std::vector<std::shared_ptr<OutputConstraint>> jobs;
  for (const PlannedSegment& seg : plan.segments) {
    for (const Sequence* s : seg.samplers) {
      // A forced token is taken as given: no mask is needed for it.
      const bool forced = static_cast<size_t>(s->n_generated) < s->req.forced_tokens.size();
      if (s->req.constraint && !forced) jobs.push_back(s->req.constraint);
    }
  }
  if (jobs.empty()) return;
  Wait();
  if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_ = std::move(jobs);
    busy_ = true;
  }
  cv_.notify_all();
}

void MaskPrefetch::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !busy_; });
}

void MaskPrefetch::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || busy_; });
    if (stop_) return;
    std::vector<std::shared_ptr<OutputConstraint>> jobs = std::move(jobs_);
    jobs_.clear();
    lock.unlock();
    for (const auto& c : jobs) c->Prepare();
    jobs.clear();
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace sparrow
