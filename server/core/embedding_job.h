#pragma once
// EmbeddingJob: the inputs of one embedding request on their way through the scheduler. They
// go as separate embedding requests (GenerationRequest::embedding), at most `window` queued or
// running at once, the next one submitted as one finishes (from the scheduler thread), so that
// a request of 2048 inputs neither fills the queue nor waits behind itself, and batches with
// generations like any prompt. The frontend polls done() after `on_ready` (called once, on any
// thread, when every input has ended or one has failed and the rest are stopped) and takes the
// vectors; Cancel() (a client gone) ends it at the next step.
// Thread-safe.
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/common/status.h"
#include "engine/sched/scheduler.h"
#include "server/core/embedding_spec.h"

namespace sparrow::server {

class EmbeddingJob : public std::enable_shared_from_this<EmbeddingJob> {
 public:
  // `scheduler` must outlive the job's requests (the caller keeps the model that holds it, as
  // it does for a generation's sinks).
  EmbeddingJob(Scheduler* scheduler, ResolvedEmbedding embedding, int64_t window,
               std::function<void()> on_ready);

  // Submits the first window. A refusal (queue full, shutting down) comes back here and nothing
  // runs; later refusals fail the job.
  Status Start();
  void Cancel();

  bool done() const;
  // Once done: ok, or why an input failed (the first), naming it.
  Status status() const;
  // Once done and ok: one vector per input, in order, each of `dimensions` components and unit
  // length.
  std::vector<std::vector<float>> TakeVectors();
  int64_t prompt_tokens() const { return embedding_.prompt_tokens; }
  // The inputs' prompt positions served by the prefix cache (last pooling only), summed.
  int64_t cached_tokens() const;

 private:
  class Sink;
  // Submits input `i`; the lock is not held.
  Status SubmitInput(size_t i);
  void Land(size_t i, std::vector<float> vector);
  void Finished(size_t i, const FinishInfo& info);
  bool cancelled() const;

  Scheduler* scheduler_;
  const ResolvedEmbedding embedding_;
  const int64_t window_;
  std::function<void()> on_ready_;

  mutable std::mutex mu_;
  std::vector<std::vector<float>> vectors_;  // guarded by mu_
  size_t next_ = 0;                          // the next input to submit; guarded by mu_
  size_t running_ = 0;                       // submitted and not finished; guarded by mu_
  size_t finished_ = 0;                      // guarded by mu_
  int64_t cached_ = 0;                       // guarded by mu_
  Status status_;                            // guarded by mu_
  bool cancelled_ = false;                   // guarded by mu_
  bool ready_ = false;                       // on_ready called; guarded by mu_
};

}  // namespace sparrow::server
