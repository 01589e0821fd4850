#pragma once
// StopMatcher: finds stop strings in generated text that arrives in pieces. It releases only
// text that can no longer be the start of a stop string, and never releases the stop text
// itself or anything after it. Not thread-safe: one per stream.
#include <string>
#include <string_view>
#include <vector>

namespace sparrow::server {

// Limits both frontends keep: every held-back byte is rescanned per token, so a long stop
// string costs each step of its stream.
inline constexpr size_t kMaxStopStrings = 8;
inline constexpr size_t kMaxStopBytes = 256;

class StopMatcher {
 public:
  // Empty strings in `stops` are ignored.
  explicit StopMatcher(std::vector<std::string> stops);

  // Appends `text`; returns the text that is now safe to emit (possibly ""). After a match,
  // returns the text before the stop string and ignores all later input.
  std::string Push(std::string_view text);
  // The text still held back (no stop string completed); call once at the end.
  std::string Flush();
  bool matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool matched_ = false;
};

}  // namespace sparrow::server
