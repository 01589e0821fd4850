#include "engine/tools/scheduled_generate.h"

#include <condition_variable>
#include <mutex>

namespace sparrow::tools {
namespace {

class CallbackSink final : public RequestSink {
 public:
  explicit CallbackSink(const std::function<void(int32_t)>& on_token) : on_token_(on_token) {}
  bool OnToken(const TokenEvent& ev) override {
    on_token_(ev.token);
    return true;
  }
  void OnFinish(const FinishInfo& info) override {
    std::lock_guard<std::mutex> lock(mu_);
    info_ = info;
    done_ = true;
    cv_.notify_all();
  }
  FinishInfo Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
    return info_;
  }

 private:
  const std::function<void(int32_t)>& on_token_;
  std::mutex mu_;
  std::condition_variable cv_;
  FinishInfo info_;
  bool done_ = false;
};

}  // namespace

Result<ScheduledGenerateStats> GenerateScheduled(const Model& model, kernels::ThreadPool* pool,
                                                 SchedulerOptions options,
                                                 std::span<const int32_t> prompt,
                                                 const GenerateOptions& gen,
                                                 const std::function<void(int32_t)>& on_token) {
  options.max_running = 1;
  options.step_token_budget = std::max<int64_t>(gen.n_batch, options.spec.draft_max + 1);
  Scheduler scheduler(model, pool, std::move(options));
  auto sink = std::make_shared<CallbackSink>(on_token);
  GenerationRequest req;
  req.prompt.assign(prompt.begin(), prompt.end());
  req.sampling = gen.sampling;
  req.max_tokens = gen.max_tokens;
  req.sink = sink;
  SPARROW_RETURN_IF_ERROR(scheduler.Submit(std::move(req)));
  const FinishInfo info = sink->Wait();
  if (info.reason == FinishReason::kError) return info.status;
  ScheduledGenerateStats st;
  st.base.prompt_tokens = info.prompt_tokens;
  st.base.generated_tokens = info.completion_tokens;
  st.base.prompt_seconds = info.ttft_ms / 1e3;
  st.base.generate_seconds = (info.total_ms - info.ttft_ms) / 1e3;
  st.base.finish_reason = info.reason == FinishReason::kContext  ? "context"
                          : info.reason == FinishReason::kLength ? "length"
                                                                 : "stop";
  st.draft_tokens = info.draft_tokens;
  st.accepted_draft_tokens = info.accepted_draft_tokens;
  st.steps = scheduler.Stats().steps;
  return st;
}

}  // namespace sparrow::tools
