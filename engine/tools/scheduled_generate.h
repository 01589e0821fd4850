#pragma once
// The CLI's generation through the engine loop (Scheduler, one request), for what only the loop
// does: speculative decoding's verify steps, drafts and rollback. Same stats as Generate, plus
// the drafts: `sparrow generate` and the bench compare the two paths on the same model.
#include <cstdint>
#include <functional>
#include <span>

#include "engine/common/result.h"
#include "engine/kernels/thread_pool.h"
#include "engine/runtime/generate.h"
#include "engine/sched/scheduler.h"

namespace sparrow::tools {

struct ScheduledGenerateStats {
  GenerateStats base;
  int64_t draft_tokens = 0;
  int64_t accepted_draft_tokens = 0;
  int64_t steps = 0;  // target forward passes
};

// `options` carries the model's scheduler settings (n_ctx, KV types, FFN, spec, is_eog);
// `on_token` is called on the scheduler's thread for every token.
Result<ScheduledGenerateStats> GenerateScheduled(const Model& model, kernels::ThreadPool* pool,
                                                 SchedulerOptions options,
                                                 std::span<const int32_t> prompt,
                                                 const GenerateOptions& gen,
                                                 const std::function<void(int32_t)>& on_token);

}  // namespace sparrow::tools
