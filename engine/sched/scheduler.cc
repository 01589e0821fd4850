#include "engine/sched/scheduler.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "engine/common/check.h"
#include "engine/kernels/thread_pool.h"
#include "engine/sched/continuous_batching_planner.h"
#include "engine/sched/scheduler_kv_user.h"
#include "engine/sparse/ffn_factory.h"

namespace sparrow {
namespace {

using Clock = SchedulerClock;

constexpr int64_t kDefaultMaxKvBytes = int64_t{1} << 30;

int64_t DefaultKvBlocks(const ModelConfig& c, const SchedulerOptions& o) {
  const int64_t per_ctx = (o.n_ctx + o.kv_block_size - 1) / o.kv_block_size;
  const int64_t want = per_ctx * std::max<int64_t>(1, o.max_running);
  const int64_t cap = kDefaultMaxKvBytes /
                      KvBlockPool::BlockBytes(c.n_layer, c.kv_dim(), o.kv_block_size, o.kv_types);
  return std::max<int64_t>(per_ctx, std::min(want, cap));
}

}  // namespace

const char* FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kContext:
      return "context";  // the OpenAI API reports it as "length"; metrics and logs tell them apart
    case FinishReason::kCancelled:
      return "cancelled";
    case FinishReason::kError:
      return "error";
  }
  return "error";
}

Scheduler::Scheduler(const Model& model, kernels::ThreadPool* pool, SchedulerOptions options)
    : model_(model),
      pool_(pool),
      opts_(std::move(options)),
      fp_(model, pool,
          opts_.make_ffn ? opts_.make_ffn(model, pool) : MakeDefaultFeedForward(model, pool)),
      kv_(model.config().n_layer, model.config().kv_dim(), opts_.kv_block_size,
          opts_.kv_blocks > 0 ? opts_.kv_blocks : DefaultKvBlocks(model.config(), opts_),
          opts_.kv_types) {
  SPARROW_CHECK(opts_.is_eog != nullptr);
  SPARROW_CHECK(opts_.n_ctx > 1 && opts_.max_running > 0 && opts_.step_token_budget > 0);
  opts_.kv_blocks = kv_.n_blocks();
  // Remote layer ranges hear of every block copy and resize (ReplaceRemoteLayers may bring them
  // later).
  kv_.SetObserver(&remote_kv_observer_);
  if (!opts_.remote_layers.empty()) {
    Status st = fp_.SetRemoteLayers(opts_.remote_layers, opts_.pipeline_micro_batches);
    SPARROW_CHECK(st.ok());
    remote_kv_observer_.OnResize(kv_.n_blocks());
  } else if (opts_.prefix_tier) {
    kv_.SetTier(opts_.prefix_tier.get());
  }
  kv_block_bytes_ = KvBlockPool::BlockBytes(model.config().n_layer, model.config().kv_dim(),
                                            opts_.kv_block_size, opts_.kv_types);
  min_kv_blocks_ =
      std::min(opts_.kv_blocks, (opts_.n_ctx + opts_.kv_block_size - 1) / opts_.kv_block_size);
  stats_.ffn_mode = fp_.ffn().mode();
  stats_.sparsity = fp_.ffn().sparsity();
  kv_user_ = std::make_shared<KvPoolUser>(this);
  scratch_ = std::make_shared<StepScratch>(&fp_, model.config(), opts_.step_token_budget,
                                           opts_.n_ctx, opts_.max_running);
  users_ = {kv_user_, scratch_};
  for (const auto& u : opts_.memory_users) {
    SPARROW_CHECK(u != nullptr);
    users_.push_back(u);
  }
  PlannerOptions planner;
  planner.n_ctx = opts_.n_ctx;
  planner.max_running = opts_.max_running;
  planner.step_time_target_ms = opts_.step_time_target_ms;
  planner.is_eog = opts_.is_eog;
  // Predicted outputs draft whatever the server's type, so the speculator is always there
  // without remote layers (whose pipeline has no room for a verify step).
  if (opts_.remote_layers.empty()) {
    spec_ = std::make_unique<Speculator>(opts_.spec, pool_, opts_.n_ctx, opts_.max_running,
                                         opts_.kv_block_size);
    planner.propose = [this](std::span<Sequence* const> seqs) { spec_->Propose(seqs); };
    planner.draft_max = opts_.spec.draft_max;
    planner.draft_min = opts_.spec.draft_min;
    stats_.spec_kv_bytes = spec_->kv_bytes();
  }
  planner.context_shift = opts_.context_shift;
  planner.causal = model_.config().causal;
  planner_ = std::make_unique<ContinuousBatchingPlanner>(&kv_, std::move(planner));
  stats_.kv = kv_.Stats();  // an idle server reports its pool, not zeros
  thread_ = std::thread([this] { Loop(); });
}

Scheduler::~Scheduler() {
  Shutdown(std::chrono::milliseconds(0));
}

Status Scheduler::Validate(const GenerationRequest& request) const {
  if (!request.sink) return InvalidArgument("request has no sink");
  const int64_t n = static_cast<int64_t>(request.prompt.size());
  if (n == 0) return InvalidArgument("the prompt is empty");
  const ModelConfig& c = model_.config();
  if (c.embedding_only() && !request.embedding) {
    return InvalidArgument("the model '" + c.name + "' is an embedding model (" +
                           std::string(c.arch->name) + "): it computes embeddings, not text");
  }
  // An encoder's learned positions end at its training context.
  if (c.arch->abs_positions && n > c.n_ctx_train) {
    return InvalidArgument("the input has " + std::to_string(n) + " tokens but the model has " +
                           std::to_string(c.n_ctx_train) + " positions");
  }
  for (int32_t id : request.prompt) {
    if (id < 0 || id >= model_.config().n_vocab) {
      return InvalidArgument("token id " + std::to_string(id) + " is outside the vocabulary of " +
                             std::to_string(model_.config().n_vocab));
    }
  }
  if (request.embedding == PoolingType::kRank && !model_.weights().classifier.present()) {
    return InvalidArgument(
        "pooling rank needs a classification head (cls.weight or cls.output.weight), which this "
        "model does not have");
  }
  // A generation needs room for one token after its prompt; an embedding only for the prompt.
  const int64_t positions = request.embedding ? n : n + 1;
  if (positions > opts_.n_ctx) {
    return InvalidArgument(
        "the prompt has " + std::to_string(n) + " tokens but the context holds " +
        std::to_string(opts_.n_ctx) +
        (request.embedding ? "" : " (prompt plus at least one generated token)"));
  }
  const int64_t blocks = (positions + opts_.kv_block_size - 1) / opts_.kv_block_size;
  // Against the configured pool, not the pool now: a budget may shrink it for a while, but never
  // under one full context, so whatever passes here can run.
  if (blocks > opts_.kv_blocks) {
    return InvalidArgument("the prompt needs " + std::to_string(blocks) +
                           " KV blocks but the pool has " + std::to_string(opts_.kv_blocks));
  }
  if (request.max_tokens < 1) return InvalidArgument("max_tokens must be at least 1");
  for (const auto& [id, bias] : request.logit_bias) {
    if (id < 0 || id >= model_.config().n_vocab) {
      return InvalidArgument("logit_bias names token id " + std::to_string(id) +
                             ", outside the vocabulary of " +
                             std::to_string(model_.config().n_vocab));
    }
  }
  for (int32_t id : request.forced_tokens) {
    if (id < 0 || id >= model_.config().n_vocab) {
      return InvalidArgument("forced token id " + std::to_string(id) +
                             " is outside the vocabulary");
    }
  }
  if (request.top_logprobs < 0 || request.top_logprobs > 20) {
    return InvalidArgument("top_logprobs must be between 0 and 20");
  }
  return request.sampling.Validate();
}

Status Scheduler::Submit(GenerationRequest request) {
  std::vector<GenerationRequest> one;
  one.push_back(std::move(request));
  return SubmitGroup(std::move(one));
}

Status Scheduler::SubmitGroup(std::vector<GenerationRequest> requests) {
  if (requests.empty()) return InvalidArgument("the request group is empty");
  if (static_cast<int64_t>(requests.size()) > opts_.max_running) {
    return InvalidArgument("a group of " + std::to_string(requests.size()) +
                           " requests is larger than max_running (" +
                           std::to_string(opts_.max_running) + ")");
  }
  for (const GenerationRequest& r : requests) {
    SPARROW_RETURN_IF_ERROR(Validate(r));
    if (r.embedding && requests.size() > 1) {
      return InvalidArgument("an embedding request cannot be part of a group");
    }
    if (r.prompt != requests[0].prompt) {
      return InvalidArgument("the requests of a group must share one prompt");
    }
  }
  const auto now = Clock::now();
  std::unique_ptr<Sequence> leader;
  for (GenerationRequest& r : requests) {
    std::unique_ptr<Sequence> seq = NewSequence(std::move(r), now);
    if (seq->req.embedding == PoolingType::kRank) {
      seq->pooler = std::make_unique<EmbeddingPooler>(model_.weights().classifier,
                                                      model_.config().n_embd, seq->n_prompt);
    } else if (seq->req.embedding) {
      seq->pooler = std::make_unique<EmbeddingPooler>(*seq->req.embedding, model_.config().n_embd,
                                                      seq->n_prompt);
    } else {
      seq->sampler = std::make_unique<Sampler>(seq->req.sampling);
      for (int32_t t : seq->req.prompt) seq->sampler->Accept(t);
    }
    if (!leader) {
      leader = std::move(seq);
    } else {
      leader->followers.push_back(std::move(seq));
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!accepting_) return ResourceExhausted("the server is shutting down");
    const auto members = static_cast<int64_t>(requests.size());
    if (stats_.waiting + members > opts_.max_queue) {
      return ResourceExhausted("the request queue is full (" + std::to_string(opts_.max_queue) +
                               " waiting); retry later");
    }
    submitted_.push_back(std::move(leader));
    submitted_members_ += members;
    stats_.waiting += members;
  }
  cv_.notify_one();
  return Status::Ok();
}

void Scheduler::TakeSubmitted() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& s : submitted_) planner_->Enqueue(std::move(s));
  submitted_.clear();
  submitted_members_ = 0;
  CountLocked();
}

void Scheduler::CountLocked() {
  stats_.waiting = submitted_members_ + planner_->waiting();
  stats_.running = planner_->running();
  stats_.preemptions = planner_->preemptions();
  stats_.kv = kv_.Stats();
}

SchedulerStats Scheduler::Stats() const {
  SchedulerStats st;
  {
    std::lock_guard<std::mutex> lock(mu_);
    st = stats_;
  }
  for (const auto& u : users_) {
    // A store's counters are read once: its held bytes are a sum of them.
    if (const auto* store = dynamic_cast<const NeuronStore*>(u.get())) {
      st.neuron_cache = store->stats();
      st.memory.push_back({u->kind(), std::string(u->name()), st.neuron_cache->held_bytes(),
                           st.neuron_cache->capacity_bytes});
      continue;
    }
    st.memory.push_back({u->kind(), std::string(u->name()), u->held_bytes(), u->capacity_bytes()});
  }
  return st;
}

void Scheduler::Shutdown(std::chrono::milliseconds deadline) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) return;
    accepting_ = false;
    draining_ = true;
    drain_deadline_ = Clock::now() + deadline;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void Scheduler::ReplaceRemoteLayers(std::vector<std::shared_ptr<RemoteLayers>> ranges) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_remote_ = std::move(ranges);
  }
  cv_.notify_one();
}

void Scheduler::ApplyPendingRemote() {
  std::optional<std::vector<std::shared_ptr<RemoteLayers>>> ranges;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ranges.swap(pending_remote_);
  }
  if (!ranges) return;
  LandAll();
  if (Status st = fp_.SetRemoteLayers(*ranges, opts_.pipeline_micro_batches); !st.ok()) {
    spdlog::error("shard: the new placement is refused: {}", st.ToString());
    return;
  }
  const int64_t preempted = planner_->PreemptAll();
  kv_.DropCached();
  if (!ranges->empty()) kv_.SetTier(nullptr);  // blocks now hold only this device's layers
  {
    std::lock_guard<std::mutex> lock(mu_);
    CountLocked();
  }
  remote_down_since_.reset();
  opts_.remote_layers = std::move(*ranges);
  remote_kv_observer_.OnResize(kv_.n_blocks());
  spdlog::info("shard: {} remote layer ranges now; {} running sequences resume from the start",
               opts_.remote_layers.size(), preempted);
}

std::chrono::steady_clock::duration Scheduler::IterationAge() const {
  const int64_t start = iteration_start_.load(std::memory_order_relaxed);
  if (start == 0) return {};
  return std::chrono::steady_clock::now().time_since_epoch() -
         std::chrono::steady_clock::duration(start);
}

void Scheduler::Loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      iteration_start_.store(0, std::memory_order_relaxed);
      cv_.wait(lock, [this] {
        return draining_ || pending_plan_ || pending_remote_ || !submitted_.empty() ||
               planner_->has_work();
      });
      iteration_start_.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                             std::memory_order_relaxed);
      if (draining_) {
        const bool idle = submitted_.empty() && !planner_->has_work();
        if (idle) break;
        if (Clock::now() >= drain_deadline_) {
          // Out of time: cancel what is left.
          lock.unlock();
          LandAll();
          TakeSubmitted();
          Finish(planner_->CancelAll());
          break;
        }
      }
    }
    TakeSubmitted();
    ApplyPendingRemote();
    ApplyPendingPlan();
    Step();
    if (flights_.empty()) scratch_->Measure();
    {
      std::lock_guard<std::mutex> lock(mu_);
      CountLocked();
    }
  }
  iteration_start_.store(0, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  stats_.running = 0;
  stats_.waiting = 0;
  stats_.kv = kv_.Stats();
}

}  // namespace sparrow
