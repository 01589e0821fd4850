#include "engine/sparse/sparsity_level.h"

#include <cmath>
#include <utility>

#include "engine/common/check.h"

namespace sparrow {

SparsityLevel::SparsityLevel(std::vector<ThresholdLevel> levels, size_t start)
    : levels_(std::move(levels)), current_(start) {
  SPARROW_CHECK(start < levels_.size());
}

double SparsityLevel::Set(double sparsity) {
  size_t best = 0;
  for (size_t i = 1; i < levels_.size(); ++i) {
    // Strictly nearer only: ties keep the lower level.
    if (std::fabs(levels_[i].sparsity - sparsity) < std::fabs(levels_[best].sparsity - sparsity)) {
      best = i;
    }
  }
  current_.store(best, std::memory_order_release);
  return levels_[best].sparsity;
}

Result<std::shared_ptr<SparsityLevel>> MakeSparsityLevel(const ActivationProfile& profile,
                                                         ThresholdMethod method, double start,
                                                         bool dense) {
  std::vector<ThresholdLevel> levels;
  if (dense) levels.push_back({0, {}});
  // A profile level this near the start is the start level itself (its float).
  for (float f : profile.levels) {
    const double s = std::round(static_cast<double>(f) * 1e6) / 1e6;
    if (s >= start - kSameSparsity) break;
    SPARROW_ASSIGN_OR_RETURN(std::vector<float> t, profile.Thresholds(method, s));
    levels.push_back({s, std::move(t)});
  }
  SPARROW_ASSIGN_OR_RETURN(std::vector<float> t, profile.Thresholds(method, start));
  levels.push_back({start, std::move(t)});
  const size_t top = levels.size() - 1;
  return std::make_shared<SparsityLevel>(std::move(levels), top);
}

}  // namespace sparrow
