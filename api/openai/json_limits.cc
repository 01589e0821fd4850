#include "api/openai/json_limits.h"

namespace sparrow::openai::json_limits_internal {

void PathTracker::ChildDone(int depth) {
  // A value at `depth` is a child of the container open at depth - 1.
  if (depth < 1 || static_cast<size_t>(depth) > frames_.size()) return;
  Frame& parent = frames_[static_cast<size_t>(depth) - 1];
  if (parent.is_array) ++parent.index;
}

std::string PathTracker::Path(size_t max_parts) const {
  std::string out;
  for (size_t i = 0; i < frames_.size(); ++i) {
    if (i == max_parts) return out + "...";
    const Frame& f = frames_[i];
    if (f.is_array) {
      out += "[" + std::to_string(f.index) + "]";
    } else {
      if (!out.empty()) out += '.';
      out += f.key;
    }
  }
  return out;
}

}  // namespace sparrow::openai::json_limits_internal
