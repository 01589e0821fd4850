#pragma once
// StreamingSink: the bridge between the scheduler thread and a frontend thread for one
// generation. On the scheduler thread it detokenizes incrementally (never splitting a UTF-8
// character), applies stop strings (text that may start a stop string is held back; the stop
// text itself is never emitted) and queues chunks; the frontend drains them from its own
// thread after `on_ready` tells it there is something new. The queue is bounded: a client that
// does not read gets its request cancelled, the scheduler is never made to wait.
// Thread-safe: the RequestSink methods run on the scheduler thread, Drain/Cancel on any other.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/sched/request.h"
#include "engine/tokenizer/incremental_detokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/core/metrics.h"
#include "server/core/stop_matcher.h"

namespace sparrow::server {

// One sampled token as reported to clients that asked for logprobs.
struct TokenLogprob {
  int32_t token = 0;
  std::string piece;  // the token's raw bytes (may be part of a UTF-8 character)
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;  // alternatives, best first
};

struct StreamChunk {
  std::string text;                  // valid UTF-8, possibly ""
  std::vector<TokenLogprob> tokens;  // filled only when logprobs were requested
};

struct StreamingSinkOptions {
  std::vector<std::string> stop;
  size_t max_pending_chunks = 1024;    // undrained chunks beyond which the request is cancelled
  size_t max_pending_bytes = 4 << 20;  // undrained bytes (text and logprob pieces), likewise
  bool logprobs = false;
  // Control tokens written out as their text (tool-call and thinking markers the answer parser
  // needs, as llama-server's preserved tokens); other control tokens stay silent.
  std::vector<int32_t> visible_special;
};

class StreamingSink final : public RequestSink {
 public:
  // `tokenizer` and `metrics` (may be null) must outlive the sink. `on_ready` is called on the
  // scheduler thread after new chunks or the finish are queued; it must not block.
  StreamingSink(const Tokenizer& tokenizer, StreamingSinkOptions options, Metrics* metrics,
                std::function<void()> on_ready);

  bool OnToken(const TokenEvent& event) override;
  void OnFinish(const FinishInfo& info) override;
  void OnAdmitted() override { admitted_.store(true, std::memory_order_relaxed); }
  bool Cancelled() const override { return cancelled_.load(std::memory_order_relaxed); }

  // The client went away: the scheduler drops the request at its next step.
  void Cancel() { cancelled_.store(true, std::memory_order_relaxed); }

  // Moves the queued chunks to the end of `*out`; true once the request has finished and
  // every chunk has been drained (finish_info() and finish_reason() are then valid).
  bool Drain(std::vector<StreamChunk>* out);
  const FinishInfo& finish_info() const { return finish_; }
  // True once the scheduler has ended the request (chunks may still be queued).
  bool finished() const {
    std::lock_guard<std::mutex> lock(mu_);
    return finished_;
  }
  // The OpenAI finish_reason: "stop" (end token or stop string), "length", "cancelled",
  // "error".
  std::string finish_reason() const;
  // For the admin API's request list: admitted by the scheduler, and tokens sampled so far.
  bool admitted() const { return admitted_.load(std::memory_order_relaxed); }
  int64_t tokens_generated() const { return tokens_.load(std::memory_order_relaxed); }
  // True when the queue overflowed because nobody drained it.
  bool overflowed() const { return overflowed_.load(std::memory_order_relaxed); }

 private:
  void Push(StreamChunk chunk, bool finished);

  const Tokenizer& tokenizer_;
  StreamingSinkOptions opts_;
  Metrics* metrics_;
  std::function<void()> on_ready_;

  // Scheduler thread only.
  IncrementalDetokenizer detok_;
  StopMatcher stop_;
  std::chrono::steady_clock::time_point last_token_;
  bool has_token_ = false;

  std::atomic<bool> cancelled_{false};
  std::atomic<bool> overflowed_{false};
  std::atomic<bool> admitted_{false};
  std::atomic<int64_t> tokens_{0};
  mutable std::mutex mu_;
  std::deque<StreamChunk> pending_;  // guarded by mu_
  size_t pending_bytes_ = 0;         // guarded by mu_
  bool finished_ = false;            // guarded by mu_
  FinishInfo finish_;                // written under mu_ before finished_ is set
};

}  // namespace sparrow::server
