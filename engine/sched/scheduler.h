#pragma once
// Scheduler: the engine loop of continuous batching. Frontends Submit() requests from any
// thread; one scheduler thread asks the step planner what to run (ContinuousBatchingPlanner:
// admission while KV blocks allow, prompt chunks within a per-step token budget, preemption of
// the newest sequence when blocks run out), runs one forward pass per step for the whole batch,
// chooses each sequence's next token from its logits (token_choice.h), feeds each request's sink
// and hands the planner what ran. Between steps it applies memory plans and new placements of
// remote layers; with remote layers it keeps one batch per device in flight.
// Thread-safe: Submit, Stats and Shutdown may be called from any thread.
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "engine/common/result.h"
#include "engine/kv/kv_block_pool.h"
#include "engine/memory/memory_plan.h"
#include "engine/memory/memory_user.h"
#include "engine/model/model.h"
#include "engine/runtime/forward_pass.h"
#include "engine/sched/mask_prefetch.h"
#include "engine/sched/request.h"
#include "engine/sched/speculator.h"
#include "engine/sched/step_plan.h"
#include "engine/sched/step_planner.h"
#include "engine/sched/step_scratch.h"
#include "engine/sparse/neuron_store.h"

namespace sparrow {
namespace kernels {
class ThreadPool;
}

struct SchedulerOptions {
  int64_t n_ctx = 2048;        // positions one sequence may use (prompt + output)
  int64_t kv_block_size = 16;  // positions per KV block
  int64_t kv_blocks = 0;       // 0: enough for max_running full contexts
  KvTypes kv_types;            // the pool's key and value types (CheckKvTypes first)
  int64_t max_running = 16;    // sequences decoding at once
  int64_t max_queue = 64;      // waiting requests beyond which Submit refuses
  // Tokens (decode + prefill chunk) per forward pass. Small enough that a step carrying a prefill
  // chunk does not stall the running streams for long (bench/RESULTS.md, serving: 128 against 512
  // cut p99 time-between-tokens 3x at 8 clients on 2 cores, same throughput and TTFT).
  int64_t step_token_budget = 128;
  // A step that decodes streams carries only as much prompt as keeps it near this many ms
  // (costs learnt as it runs, step_time_model.h); 0: the token budget alone decides.
  double step_time_target_ms = 0;
  std::function<bool(int32_t)> is_eog;  // end-of-generation tokens; required
  // The FFN the forward pass runs (sparse_plan.h: MakeFeedForward); null: the model's default
  // (MakeDefaultFeedForward). A memory plan's sparsity goes to it (FeedForward::SetSparsity).
  std::function<std::unique_ptr<FeedForward>(const Model&, kernels::ThreadPool*)> make_ffn;
  // Memory users besides the two the scheduler owns (the KV pool and the step's scratch): the
  // FFN's neuron or expert cache when its rows live on flash (--cache-mb; a NeuronStore's
  // counters join Stats()). Memory plans resize each by its name.
  std::vector<std::shared_ptr<MemoryUser>> memory_users;
  // Layer ranges other devices compute (collaborative inference): sorted, disjoint, checked by
  // ForwardPass::SetRemoteLayers before the scheduler is built. They hear of every block copy and
  // resize of the KV pool, so their blocks mirror it.
  std::vector<std::shared_ptr<RemoteLayers>> remote_layers;
  // With remote layers: the parts a step's batch is cut into to flow through the devices as a
  // pipeline (ForwardPass::SetRemoteLayers); 0: one per device; 1: no pipeline (one batch at a
  // time goes whole from device to device). Otherwise the scheduler keeps one batch per device
  // in flight, each with its share of the decoding sequences, and samples one while the others
  // are computed (EdgeShard's pipeline without bubbles); step_time_target_ms is then not learnt.
  int64_t pipeline_micro_batches = 0;
  // With remote layers: how long after a range's device fails requests wait (for a new
  // placement without it, or its return) before they fail with its error; 0: they fail at once.
  // The sequences of the failed batches resume from the start, as after a new placement.
  std::chrono::milliseconds remote_down_wait{0};
  // Speculative decoding: the drafter and the draft's length (off without remote layers only;
  // a request's prediction drafts whatever the type). spec_options.h.
  SpecOptions spec;
  // The prefix cache's tier outside memory (PromptCacheStore: --prompt-cache-dir); null: none.
  // Unused with remote layers, whose blocks hold only this device's layers.
  std::shared_ptr<KvBlockTier> prefix_tier;
  // A sequence filling n_ctx drops the middle of its context and goes on (PlannerOptions).
  bool context_shift = false;
};

struct SchedulerStats {
  int64_t waiting = 0;
  int64_t running = 0;
  KvPoolStats kv;
  int64_t requests_finished = 0;
  int64_t requests_cancelled = 0;
  int64_t requests_failed = 0;
  int64_t prompt_tokens = 0;  // computed (not served from cache), cumulative
  int64_t generated_tokens = 0;
  int64_t preemptions = 0;
  int64_t steps = 0;
  std::string_view ffn_mode;                     // "dense", or the sparse policy (a static string)
  FfnCounters ffn;                               // decoded tokens' FFN neurons, total and computed
  std::optional<NeuronStoreStats> neuron_cache;  // with a neuron store (SchedulerOptions)
  std::vector<MemoryUserStats> memory;           // every memory user: the KV pool, scratch, ...
  int64_t memory_plan_version = 0;               // the last plan applied (0: none yet)
  double memory_plan_latency_ms = 0;             // from its decision to its application
  std::optional<double> sparsity;                // the level in force (FeedForward::sparsity)
  // Speculative decoding, by DraftSource: draft tokens verified and accepted, cumulative.
  std::array<int64_t, kDraftSources> spec_drafted{}, spec_accepted{};
  int64_t spec_kv_bytes = 0;  // the draft model's KV pool
};

class Scheduler {
 public:
  // The model and pool must outlive the scheduler. Starts the step thread.
  Scheduler(const Model& model, kernels::ThreadPool* pool, SchedulerOptions options);
  ~Scheduler();  // Shutdown(0)

  // Queues a request. InvalidArgument when it can never run (empty prompt, prompt + 1 over
  // n_ctx (an embedding's prompt alone), prompt larger than the whole KV pool, bad sampling),
  // naming the numbers;
  // ResourceExhausted when the queue is full (retry later). On error the sink is not called.
  Status Submit(GenerationRequest request);
  // Queues several requests with the same prompt (the n choices of one API call) as a group:
  // the prompt is computed once, then each member forks the KV blocks, the partial last block
  // shared copy-on-write, and samples on its own. The group is admitted whole. Errors as for
  // Submit, plus InvalidArgument when the prompts differ; on error no sink is called.
  Status SubmitGroup(std::vector<GenerationRequest> requests);

  SchedulerStats Stats() const;

  // Applies `plan` between two steps (at once when idle): the compute threads are set, the
  // sparsity level (the allowed one nearest the plan's, FeedForward::SetSparsity), and each
  // memory user it names is resized to its bytes (the KV pool preempting the newest sequences,
  // which resume later with their prefix kept where the prefix cache still holds it, when the
  // blocks in use do not fit) and given its level. Returns at once; a newer plan replaces one
  // not applied yet. Stats() names the plan applied. An urgent plan (critical pressure cannot
  // wait for the step in flight: a step under reclaim stalls can take seconds while a hog fills
  // the last of the limit) first shrinks the users that can from the caller's thread
  // (MemoryUser::ShrinkNow: the neuron cache waits at most for the layer in use).
  void ApplyMemoryPlan(MemoryPlan plan);
  // Other devices' layer ranges change (a device left or came back and the layers were placed
  // again): applied between steps, after the batches in flight land. The devices that take new
  // layers hold no keys for them, so every running sequence is preempted (it resumes later,
  // recomputing what it had) and the prefix cache is forgotten. Empty: this device computes
  // every layer. The ranges are checked as SetRemoteLayers does; a bad set is logged and
  // ignored (the old ranges stay).
  void ReplaceRemoteLayers(std::vector<std::shared_ptr<RemoteLayers>> ranges);
  // kv_blocks: the pool's size as configured, the most a budget may give it.
  const SchedulerOptions& options() const { return opts_; }
  // The KV pool's bounds under a budget: a block's bytes, the fewest blocks it may shrink to (one
  // full context, so that every request Submit accepts can still run), and the most (as
  // configured).
  int64_t kv_block_bytes() const { return kv_block_bytes_; }
  int64_t min_kv_blocks() const { return min_kv_blocks_; }
  // How long the step loop has been in its current iteration; zero while it waits for work. A
  // loop that stays far longer in one iteration than a step takes is stuck: the service
  // watchdog stops vouching for the server then (server/core/service_watchdog.h).
  std::chrono::steady_clock::duration IterationAge() const;

  // Stops admitting new requests, lets running ones finish until `deadline`, then cancels
  // what is left (sinks get kCancelled) and joins the step thread. Idempotent.
  void Shutdown(std::chrono::milliseconds deadline);

 private:
  void Loop();
  // One iteration: asks the planner for a step, submits it, lands the oldest batch when the
  // pipeline is full or nothing more can be sent.
  void Step();
  // A step submitted to the forward pass and not landed yet.
  struct Flight {
    StepPlan plan;
    std::vector<ForwardPass::Segment> segs;  // the forward pass reads them until Collect
    std::chrono::steady_clock::time_point start;
  };
  // Collects the oldest batch in flight: chooses the tokens, streams them and hands the
  // planner what ran.
  void LandOldest();
  void LandAll();
  // Batches kept in flight: 1, or one per device of a pipeline (remote layers).
  int64_t PipelineDepth() const;
  // Tells the sinks of what a plan admitted and ended.
  void Report(StepPlan* plan);
  // Tells each finished sequence's sink, with its usage and timings.
  void Finish(std::vector<std::unique_ptr<Sequence>> done);
  Status Validate(const GenerationRequest& request) const;
  // Chooses the next token of `s` from its logits row and streams it; what the planner hears.
  TokenChoice EmitToken(Sequence& s, std::span<const float> row);
  // A verify segment's tokens (speculative decoding): one per row while the target agrees with
  // the draft, then the target's own; cut short by a stop or an end-of-generation token.
  std::vector<TokenChoice> EmitVerified(Sequence& s, const float* rows);
  // Hands an embedding request's rows for positions pos..pos + n - 1 to its pooler, and the
  // finished embedding to its sink after the prompt's last chunk.
  void LandEmbeddingRows(Sequence& s, int64_t pos, int64_t n, std::span<const float> rows);
  // Moves what Submit queued to the planner (scheduler thread).
  void TakeSubmitted();
  // Publishes the planner's and the pool's gauges to stats_.
  void CountLocked();
  // Applies the pending memory plan, if any (scheduler thread, between steps).
  void ApplyPendingPlan();
  // The KV pool as a memory user (scheduler_memory.cc).
  class KvPoolUser;
  void ApplyPendingRemote();  // scheduler thread, between steps
  // While a remote range is unreachable, within remote_down_wait of its failure: waits a little
  // for a new placement instead of stepping (true), so that no request fails meanwhile.
  bool HoldForRemote();
  // Within remote_down_wait of the failure that began the current outage (starting one).
  bool RemoteWaitLeft();
  // Resizes the KV pool to `blocks`, preempting sequences while the blocks in use do not fit.
  void ResizeKv(int64_t blocks);

  // Tells the remote layer ranges of the KV pool's copies and resizes.
  class RemoteKvObserver final : public KvBlockObserver {
   public:
    explicit RemoteKvObserver(const std::vector<std::shared_ptr<RemoteLayers>>* ranges)
        : ranges_(ranges) {}
    void OnCopy(BlockId src, BlockId dst) override {
      for (const auto& r : *ranges_) r->OnBlockCopy(src, dst);
    }
    void OnResize(int64_t n_blocks) override {
      for (const auto& r : *ranges_) r->OnPoolResize(n_blocks);
    }

   private:
    const std::vector<std::shared_ptr<RemoteLayers>>* ranges_;
  };

  const Model& model_;
  kernels::ThreadPool* pool_;  // may be null (single-threaded)
  SchedulerOptions opts_;
  RemoteKvObserver remote_kv_observer_{&opts_.remote_layers};
  // When the remote failure now waited out began; reset by a batch landing or a new placement.
  std::optional<std::chrono::steady_clock::time_point> remote_down_since_;
  ForwardPass fp_;
  KvBlockPool kv_;
  int64_t kv_block_bytes_ = 0;
  int64_t min_kv_blocks_ = 0;
  // Before the planner: its sequences hold draft KV in the speculator's pool.
  std::unique_ptr<Speculator> spec_;      // null without speculative decoding
  std::unique_ptr<StepPlanner> planner_;  // scheduler thread only (built before the thread)
  std::shared_ptr<KvPoolUser> kv_user_;
  std::shared_ptr<StepScratch> scratch_;
  // Every memory user, the KV pool and the scratch first (fixed after construction).
  std::vector<std::shared_ptr<MemoryUser>> users_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  // Submitted, not yet handed to the planner; guarded by mu_ (group leaders).
  std::deque<std::unique_ptr<Sequence>> submitted_;
  int64_t submitted_members_ = 0;  // guarded by mu_
  bool accepting_ = true;          // guarded by mu_
  bool stop_ = false;              // guarded by mu_
  std::chrono::steady_clock::time_point drain_deadline_;
  bool draining_ = false;
  std::optional<MemoryPlan> pending_plan_;                                    // guarded by mu_
  std::optional<std::vector<std::shared_ptr<RemoteLayers>>> pending_remote_;  // guarded by mu_
  SchedulerStats stats_;                                                      // guarded by mu_

  std::deque<Flight> flights_;  // scheduler thread only; oldest first
  // Constrained sequences' masks, computed while their step's forward pass runs.
  MaskPrefetch mask_prefetch_;
  // When the loop's current iteration began (steady clock ticks); 0 while it waits for work.
  std::atomic<int64_t> iteration_start_{0};
  std::thread thread_;
};

}  // namespace sparrow
