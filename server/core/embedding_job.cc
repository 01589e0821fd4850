#include "server/core/embedding_job.h"

#include <algorithm>

#include "engine/runtime/embedding_pooler.h"

namespace sparrow::server {

// One input's sink: hands the scheduler's answer to the job (scheduler thread).
class EmbeddingJob::Sink final : public RequestSink {
 public:
  Sink(std::shared_ptr<EmbeddingJob> job, size_t i) : job_(std::move(job)), i_(i) {}
  bool OnToken(const TokenEvent&) override { return false; }  // embeddings sample nothing
  void OnEmbedding(std::vector<float> embedding) override { job_->Land(i_, std::move(embedding)); }
  void OnFinish(const FinishInfo& info) override { job_->Finished(i_, info); }
  bool Cancelled() const override { return job_->cancelled(); }

 private:
  std::shared_ptr<EmbeddingJob> job_;
  size_t i_;
};

EmbeddingJob::EmbeddingJob(Scheduler* scheduler, ResolvedEmbedding embedding, int64_t window,
                           std::function<void()> on_ready)
    : scheduler_(scheduler),
      embedding_(std::move(embedding)),
      window_(std::max<int64_t>(1, window)),
      on_ready_(std::move(on_ready)) {
  vectors_.resize(embedding_.inputs.size());
}

Status EmbeddingJob::SubmitInput(size_t i) {
  GenerationRequest r;
  r.prompt = embedding_.inputs[i];
  r.embedding = embedding_.pooling;
  r.sink = std::make_shared<Sink>(shared_from_this(), i);
  Status st = scheduler_->Submit(std::move(r));
  if (!st.ok() && embedding_.inputs.size() > 1) {
    return Status(st.code(), "input[" + std::to_string(i) + "]: " + st.message());
  }
  return st;
}

Status EmbeddingJob::Start() {
  const size_t first = std::min(embedding_.inputs.size(), static_cast<size_t>(window_));
  {
    std::lock_guard<std::mutex> lock(mu_);
    next_ = first;
    running_ = first;
  }
  for (size_t i = 0; i < first; ++i) {
    Status st = SubmitInput(i);
    if (st.ok()) continue;
    // The ones already queued are stopped; the caller answers with the refusal.
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    ready_ = true;  // the frontend does not wait for on_ready after a refusal
    running_ -= first - i;
    return st;
  }
  return Status::Ok();
}

void EmbeddingJob::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
}

bool EmbeddingJob::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

void EmbeddingJob::Land(size_t i, std::vector<float> vector) {
  // Matryoshka: the first components, made a unit vector again.
  if (static_cast<int64_t>(vector.size()) > embedding_.dimensions) {
    vector.resize(static_cast<size_t>(embedding_.dimensions));
    NormalizeL2(vector);
  }
  std::lock_guard<std::mutex> lock(mu_);
  vectors_[i] = std::move(vector);
}

void EmbeddingJob::Finished(size_t i, const FinishInfo& info) {
  size_t submit = embedding_.inputs.size();
  bool ready = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --running_;
    ++finished_;
    cached_ += info.cached_prompt_tokens;
    if (info.reason != FinishReason::kStop && status_.ok()) {
      const std::string what =
          embedding_.inputs.size() > 1 ? "input[" + std::to_string(i) + "]: " : std::string();
      status_ = info.reason == FinishReason::kError
                    ? Status(info.status.code(), what + info.status.message())
                    : Status(StatusCode::kCancelled,
                             what + "cancelled (the client went away or the server stopped)");
      cancelled_ = true;  // the others need not run
    }
    if (!cancelled_ && next_ < embedding_.inputs.size()) {
      submit = next_++;
      ++running_;
    }
    if (running_ == 0 && (cancelled_ || next_ == embedding_.inputs.size()) && !ready_) {
      ready = ready_ = true;
    }
  }
  if (submit < embedding_.inputs.size()) {
    Status st = SubmitInput(submit);
    if (!st.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      --running_;
      if (status_.ok()) status_ = st;
      cancelled_ = true;
      if (running_ == 0 && !ready_) ready = ready_ = true;
    }
  }
  if (ready && on_ready_) on_ready_();
}

bool EmbeddingJob::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ready_;
}

Status EmbeddingJob::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

std::vector<std::vector<float>> EmbeddingJob::TakeVectors() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::move(vectors_);
}

int64_t EmbeddingJob::cached_tokens() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_;
}

}  // namespace sparrow::server
