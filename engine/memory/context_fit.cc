#include "engine/memory/context_fit.h"

#include <algorithm>

#include "engine/memory/memory_budget.h"

namespace sparrow {
namespace {

constexpr int64_t kContextWithoutTraining = 2048;

}  // namespace

ContextFit FitContext(const ContextFitInput& in) {
  const int64_t train = in.n_ctx_train > 0 ? in.n_ctx_train : kContextWithoutTraining;
  const int64_t granule = std::max<int64_t>(1, in.granule);
  if (in.offer_bytes == 0 || in.kv_bytes_per_token == 0) return {train, ""};
  const uint64_t room = in.offer_bytes > in.fixed_bytes ? in.offer_bytes - in.fixed_bytes : 0;
  const auto fits = static_cast<int64_t>(room / 2 / in.kv_bytes_per_token);
  if (fits >= train) return {train, ""};
  // Never below one granule (or the training context, when that is shorter): a server that
  // cannot hold a short prompt is of no use, and the budget says so when it starves.
  const int64_t n_ctx = std::min(train, std::max(granule, fits / granule * granule));
  const uint64_t train_kv = static_cast<uint64_t>(train) * in.kv_bytes_per_token;
  return {n_ctx, "one request of the training context (" + std::to_string(train) +
                     " tokens) needs " + WholeMib(train_kv) + " of KV; the device offers " +
                     WholeMib(in.offer_bytes) + ", " + WholeMib(in.fixed_bytes) +
                     " of it for weights, scratch, cache and the process, and at most half of "
                     "the rest goes to one request's KV"};
}

}  // namespace sparrow
