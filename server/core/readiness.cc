#include "server/core/readiness.h"

#include "server/core/server_context.h"

namespace sparrow::server {

Readiness ReadinessOf(const ServerContext& ctx) {
  if (ctx.reloading.load()) {
    return {false, "reloading", "the admin API is switching models; admissions resume after"};
  }
  if (ctx.draining.load()) {
    return {false, "draining", "an operator drained this server (POST /admin/v1/resume ends it)"};
  }
  const std::shared_ptr<ServedModel> served = ctx.served();
  if (!served) return {};  // asleep: the next request loads it
  const SchedulerStats st = served->scheduler->Stats();
  // Starved admits one request that fits the floor and nothing beside it (SubmitGeneration).
  if (served->memory && served->memory->stats().starved && st.running + st.waiting > 0) {
    return {false, "memory_starved",
            "the device is critically short of memory; the budget's floor is taken"};
  }
  if (st.waiting >= ctx.config.max_queue) {
    return {false, "queue_full",
            std::to_string(st.waiting) + " requests wait (max_queue " +
                std::to_string(ctx.config.max_queue) + ")"};
  }
  return {};
}

}  // namespace sparrow::server
