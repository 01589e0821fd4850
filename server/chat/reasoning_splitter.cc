#include "server/chat/reasoning_splitter.h"

#include <algorithm>

namespace sparrow::server {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

bool IsSpace(char c) {
  return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

void TrimFront(std::string* s) {
  size_t i = 0;
  while (i < s->size() && IsSpace((*s)[i])) ++i;
  s->erase(0, i);
}

}  // namespace

bool ReasoningFormatFromName(std::string_view name, ReasoningFormat* out) {
  if (name == "none") {
    *out = ReasoningFormat::kNone;
  } else if (name == "deepseek" || name == "auto") {
    *out = ReasoningFormat::kDeepSeek;
  } else {
    return false;
  }
  return true;
}

const char* ReasoningFormatName(ReasoningFormat f) {
  return f == ReasoningFormat::kNone ? "none" : "deepseek";
}

ReasoningSplitter::ReasoningSplitter(bool starts_in_thinking)
    : state_(starts_in_thinking ? State::kThinking : State::kStart) {}

ReasoningParts ReasoningSplitter::Push(std::string_view text) {
  ReasoningParts out;
  buf_.append(text);
  if (state_ == State::kStart) {
    size_t i = 0;
    while (i < buf_.size() && IsSpace(buf_[i])) ++i;
    const std::string_view rest = std::string_view(buf_).substr(i);
    const size_t n = std::min(rest.size(), kOpen.size());
    if (rest.substr(0, n) != kOpen.substr(0, n)) {
      state_ = State::kAnswer;
      trim_ = false;  // no thinking: the answer is as written
    } else if (n < kOpen.size()) {
      return out;  // may still become <think>
    } else {
      buf_.erase(0, i + kOpen.size());
      state_ = State::kThinking;
    }
  }
  if (trim_) TrimFront(&buf_);
  if (state_ == State::kThinking) {
    const size_t close = buf_.find(kClose);
    if (close == std::string::npos) {
      // Hold back what may start </think>, and the whitespace before it (trimmed at the end).
      size_t keep = 0;
      for (size_t len = std::min(kClose.size() - 1, buf_.size()); len > 0; --len) {
        if (std::string_view(buf_).substr(buf_.size() - len) == kClose.substr(0, len)) {
          keep = len;
          break;
        }
      }
      while (keep < buf_.size() && IsSpace(buf_[buf_.size() - keep - 1])) ++keep;
      out.reasoning = buf_.substr(0, buf_.size() - keep);
      buf_.erase(0, buf_.size() - keep);
      if (!out.reasoning.empty()) trim_ = false;
      return out;
    }
    std::string thought = buf_.substr(0, close);
    while (!thought.empty() && IsSpace(thought.back())) thought.pop_back();
    out.reasoning = std::move(thought);
    buf_.erase(0, close + kClose.size());
    state_ = State::kAnswer;
    trim_ = true;
    TrimFront(&buf_);
  }
  if (state_ == State::kAnswer) {
    out.content = std::move(buf_);
    buf_.clear();
    if (!out.content.empty()) trim_ = false;
  }
  return out;
}

ReasoningParts ReasoningSplitter::Finish() {
  ReasoningParts out;
  if (state_ == State::kThinking) {
    while (!buf_.empty() && IsSpace(buf_.back())) buf_.pop_back();
    out.reasoning = std::move(buf_);
  } else if (!(trim_ && state_ == State::kAnswer)) {
    out.content = std::move(buf_);
  }
  buf_.clear();
  return out;
}

ReasoningParts SplitReasoning(std::string_view text, bool starts_in_thinking) {
  ReasoningSplitter s(starts_in_thinking);
  ReasoningParts out = s.Push(text);
  ReasoningParts tail = s.Finish();
  out.reasoning += tail.reasoning;
  out.content += tail.content;
  return out;
}

}  // namespace sparrow::server
