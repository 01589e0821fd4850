#include "server/core/streaming_sink.h"

#include <algorithm>

namespace sparrow::server {

StreamingSink::StreamingSink(const Tokenizer& tokenizer, StreamingSinkOptions options,
                             Metrics* metrics, std::function<void()> on_ready)
    : tokenizer_(tokenizer),
      opts_(std::move(options)),
      metrics_(metrics),
      on_ready_(std::move(on_ready)),
      detok_(tokenizer),
      stop_(opts_.stop) {}

bool StreamingSink::OnToken(const TokenEvent& event) {
  // A cancelled request is dropped at the scheduler's next Cancelled() poll, as kCancelled;
  // returning false here would report it as a normal stop.
  if (Cancelled()) return true;
  tokens_.fetch_add(1, std::memory_order_relaxed);
  const auto now = std::chrono::steady_clock::now();
  if (has_token_ && metrics_) {
    metrics_->ObserveTbt(std::chrono::duration<double>(now - last_token_).count());
  }
  has_token_ = true;
  last_token_ = now;

  StreamChunk chunk;
  const auto& visible = opts_.visible_special;
  const bool shown = std::find(visible.begin(), visible.end(), event.token) != visible.end();
  chunk.text = stop_.Push(shown ? detok_.PushBytes(tokenizer_.piece(event.token, true))
                                : detok_.Push(event.token));
  if (opts_.logprobs) {
    TokenLogprob lp;
    lp.token = event.token;
    lp.piece = std::string(tokenizer_.piece(event.token));
    lp.logprob = event.logprob;
    lp.top = event.top_logprobs;
    chunk.tokens.push_back(std::move(lp));
  }
  const bool keep_going = !stop_.matched();
  Push(std::move(chunk), false);
  return keep_going;
}

void StreamingSink::OnFinish(const FinishInfo& info) {
  StreamChunk tail;
  if (!stop_.matched()) {
    // What is still held back did not turn into a stop string: it belongs to the output.
    tail.text = stop_.Push(detok_.Flush());
    tail.text += stop_.Flush();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    finish_ = info;
  }
  if (metrics_) metrics_->RecordFinish(info);
  Push(std::move(tail), true);
}

void StreamingSink::Push(StreamChunk chunk, bool finished) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const bool empty = chunk.text.empty() && chunk.tokens.empty();
    if (!empty) {
      // What the frontend will hold for this chunk, near enough: text, pieces, alternatives.
      size_t bytes = chunk.text.size();
      for (const auto& t : chunk.tokens) bytes += t.piece.size() + 16 * (1 + t.top.size());
      if (!finished && (pending_.size() >= opts_.max_pending_chunks ||
                        pending_bytes_ + bytes > opts_.max_pending_bytes)) {
        // The reader is not keeping up: give up on the request rather than block the step.
        overflowed_.store(true, std::memory_order_relaxed);
        cancelled_.store(true, std::memory_order_relaxed);
      } else {
        pending_bytes_ += bytes;
        pending_.push_back(std::move(chunk));
      }
    }
    if (finished) finished_ = true;
  }
  if (on_ready_) on_ready_();
}

bool StreamingSink::Drain(std::vector<StreamChunk>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  while (!pending_.empty()) {
    out->push_back(std::move(pending_.front()));
    pending_.pop_front();
  }
  pending_bytes_ = 0;
  return finished_;
}

std::string StreamingSink::finish_reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  switch (finish_.reason) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
    case FinishReason::kContext:
      return "length";
    case FinishReason::kCancelled:
      return "cancelled";
    case FinishReason::kError:
      return "error";
  }
  return "stop";
}

}  // namespace sparrow::server
