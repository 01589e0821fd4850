#include "engine/sched/context_shift.h"

#include <algorithm>

#include "engine/common/check.h"

namespace sparrow {

namespace {

int64_t ClampKeep(int64_t n_keep, int64_t n_ctx) {
  return std::clamp<int64_t>(n_keep, 0, std::max<int64_t>(0, n_ctx - 4));
}

}  // namespace

ContextCut PlanContextShift(int64_t n_past, int64_t n_keep, int64_t n_ctx) {
  ContextCut c;
  c.keep = std::min(ClampKeep(n_keep, n_ctx), n_past);
  c.discard = (n_past - c.keep) / 2;
  return c;
}

std::vector<int32_t> TruncatePrompt(const std::vector<int32_t>& prompt, int64_t n_keep,
                                    int64_t n_ctx) {
  const auto n = static_cast<int64_t>(prompt.size());
  if (n < n_ctx) return prompt;
  const int64_t keep = ClampKeep(n_keep, n_ctx);
  const int64_t half = std::max<int64_t>(1, (n_ctx - keep) / 2);
  const int64_t erased = (n - keep - half) / half;
  std::vector<int32_t> out(prompt.begin(), prompt.begin() + keep);
  out.insert(out.end(), prompt.begin() + keep + erased * half, prompt.end());
  SPARROW_CHECK(static_cast<int64_t>(out.size()) < n_ctx);
  return out;
}

}  // namespace sparrow
