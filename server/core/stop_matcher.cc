#include "server/core/stop_matcher.h"

#include <algorithm>

namespace sparrow::server {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (auto& s : stops) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

std::string StopMatcher::Push(std::string_view text) {
  if (matched_) return "";
  held_.append(text);
  // The earliest complete stop string wins, so text before it is never withheld.
  size_t first = std::string::npos;
  for (const auto& s : stops_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    matched_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // Hold back the longest tail that is a prefix of some stop string: it may complete later.
  size_t keep = 0;
  for (const auto& s : stops_) {
    const size_t max_len = std::min(s.size() - 1, held_.size());
    for (size_t len = max_len; len > keep; --len) {
      if (std::string_view(held_).substr(held_.size() - len) ==
          std::string_view(s).substr(0, len)) {
        keep = len;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopMatcher::Flush() {
  if (matched_) return "";
  std::string out = std::move(held_);
  held_.clear();
  return out;
}

}  // namespace sparrow::server
