#include "engine/sched/scheduler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "engine/common/check.h"
#include "engine/kernels/thread_pool.h"
#include "engine/kv/sequence_kv.h"

namespace sparrow {
namespace {

using Clock = std::chrono::steady_clock;

double MsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

constexpr int64_t kDefaultMaxKvBytes = int64_t{1} << 30;

// Under a tight memory plan a step may still take this many tokens, whatever the largest one
// before it took (a server that has only decoded would otherwise recompute a preempted sequence
// a token or two per step).
constexpr int64_t kTightStepFloor = 32;

int64_t DefaultKvBlocks(const ModelConfig& c, const SchedulerOptions& o) {
  const int64_t per_ctx = (o.n_ctx + o.kv_block_size - 1) / o.kv_block_size;
  const int64_t want = per_ctx * std::max<int64_t>(1, o.max_running);
  const int64_t cap =
      kDefaultMaxKvBytes / KvBlockPool::BlockBytes(c.n_layer, c.kv_dim(), o.kv_block_size);
  return std::max<int64_t>(per_ctx, std::min(want, cap));
}

// log-softmax of the sampled token and the `top` best alternatives, from raw logits.
void FillLogprobs(std::span<const float> logits, int32_t token, int32_t top, TokenEvent* ev) {
  float mx = logits[0];
  for (float l : logits) mx = std::max(mx, l);
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l - mx));
  const float log_z = mx + static_cast<float>(std::log(sum));
  ev->logprob = logits[token] - log_z;
  if (top <= 0) return;
  std::vector<int32_t> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  const size_t k = std::min<size_t>(top, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  for (size_t i = 0; i < k; ++i) ev->top_logprobs.emplace_back(ids[i], logits[ids[i]] - log_z);
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

struct Scheduler::Sequence {
  GenerationRequest req;
  std::vector<int32_t> tokens;  // prompt then generated tokens; recomputed after preemption
  int64_t n_prompt = 0;
  int64_t n_computed = 0;  // positions whose keys/values are in the cache
  int64_t n_generated = 0;
  int64_t cached_prompt = 0;
  int64_t preemptions = 0;
  std::unique_ptr<SequenceKv> kv;
  std::unique_ptr<Sampler> sampler;
  Clock::time_point submitted, admitted, first_token;
  bool has_first_token = false;
  bool done = false;
  bool in_flight = false;  // in a batch the forward pass has not landed yet
  // Other members of this sequence's group (same prompt): they fork from it once its prompt
  // is computed.
  std::vector<std::unique_ptr<Sequence>> followers;
};

Scheduler::Scheduler(const Model& model, kernels::ThreadPool* pool, SchedulerOptions options)
    : model_(model),
      pool_(pool),
      opts_(std::move(options)),
      fp_(model, pool, opts_.make_ffn ? opts_.make_ffn(model, pool) : nullptr),
      kv_(model.config().n_layer, model.config().kv_dim(), opts_.kv_block_size,
          opts_.kv_blocks > 0 ? opts_.kv_blocks : DefaultKvBlocks(model.config(), opts_)),
      step_time_(opts_.step_time_target_ms) {
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
  }
  kv_block_bytes_ =
      KvBlockPool::BlockBytes(model.config().n_layer, model.config().kv_dim(), opts_.kv_block_size);
  min_kv_blocks_ =
      std::min(opts_.kv_blocks, (opts_.n_ctx + opts_.kv_block_size - 1) / opts_.kv_block_size);
  stats_.ffn_mode = fp_.ffn().mode();
  if (opts_.sparsity_level) stats_.sparsity = opts_.sparsity_level->Current().sparsity;
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
  for (int32_t id : request.prompt) {
    if (id < 0 || id >= model_.config().n_vocab) {
      return InvalidArgument("token id " + std::to_string(id) + " is outside the vocabulary of " +
                             std::to_string(model_.config().n_vocab));
    }
  }
  if (n + 1 > opts_.n_ctx) {
    return InvalidArgument("the prompt has " + std::to_string(n) +
                           " tokens but the context holds " + std::to_string(opts_.n_ctx) +
                           " (prompt plus at least one generated token)");
  }
  const int64_t blocks = (n + 1 + opts_.kv_block_size - 1) / opts_.kv_block_size;
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
    if (r.prompt != requests[0].prompt) {
      return InvalidArgument("the requests of a group must share one prompt");
    }
  }
  const auto now = Clock::now();
  std::unique_ptr<Sequence> leader;
  for (GenerationRequest& r : requests) {
    auto seq = std::make_unique<Sequence>();
    seq->tokens = r.prompt;
    seq->n_prompt = static_cast<int64_t>(r.prompt.size());
    seq->sampler = std::make_unique<Sampler>(r.sampling);
    for (int32_t t : r.prompt) seq->sampler->Accept(t);
    seq->req = std::move(r);
    seq->submitted = now;
    if (!leader) {
      leader = std::move(seq);
    } else {
      leader->followers.push_back(std::move(seq));
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!accepting_) return ResourceExhausted("the server is shutting down");
    if (stats_.waiting + static_cast<int64_t>(requests.size()) > opts_.max_queue) {
      return ResourceExhausted("the request queue is full (" + std::to_string(opts_.max_queue) +
                               " waiting); retry later");
    }
    waiting_.push_back(std::move(leader));
    CountWaitingLocked();
  }
  cv_.notify_one();
  return Status::Ok();
}

void Scheduler::CountWaitingLocked() {
  int64_t n = 0;
  for (const auto& s : waiting_) n += 1 + static_cast<int64_t>(s->followers.size());
  stats_.waiting = n;
}

void Scheduler::ReleaseFollowers(Sequence& leader) {
  if (leader.followers.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = leader.followers.rbegin(); it != leader.followers.rend(); ++it) {
    waiting_.push_front(std::move(*it));
  }
  leader.followers.clear();
  CountWaitingLocked();
}

SchedulerStats Scheduler::Stats() const {
  SchedulerStats st;
  {
    std::lock_guard<std::mutex> lock(mu_);
    st = stats_;
  }
  if (opts_.neuron_store) st.neuron_cache = opts_.neuron_store->stats();
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

void Scheduler::Finish(Sequence& s, FinishReason reason, Status status) {
  if (s.done) return;
  s.done = true;
  ReleaseFollowers(s);
  const auto now = Clock::now();
  FinishInfo info;
  info.reason = reason;
  info.status = std::move(status);
  info.prompt_tokens = s.n_prompt;
  info.cached_prompt_tokens = s.cached_prompt;
  info.completion_tokens = s.n_generated;
  info.queue_ms = s.admitted.time_since_epoch().count() ? MsBetween(s.submitted, s.admitted)
                                                        : MsBetween(s.submitted, now);
  info.ttft_ms = s.has_first_token ? MsBetween(s.submitted, s.first_token) : 0;
  info.total_ms = MsBetween(s.submitted, now);
  info.preemptions = s.preemptions;
  if (s.kv) {
    s.kv->PublishFullBlocks(s.tokens, s.n_computed);  // later turns of a chat reuse them
    s.kv->ReleaseAll();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (reason == FinishReason::kCancelled)
      ++stats_.requests_cancelled;
    else if (reason == FinishReason::kError)
      ++stats_.requests_failed;
    else
      ++stats_.requests_finished;
    // Whoever hears of the finish sees the blocks already returned, and this sequence no
    // longer running (it leaves running_ after the step): a client that sends its next
    // request on hearing the answer must not find it still counted (admission at the floor).
    stats_.kv = kv_.Stats();
    stats_.running =
        std::count_if(running_.begin(), running_.end(), [](const auto& r) { return !r->done; });
  }
  s.req.sink->OnFinish(info);
}

Scheduler::Sequence* Scheduler::PreemptNewest() {
  auto it =
      std::find_if(running_.rbegin(), running_.rend(), [](const auto& s) { return !s->in_flight; });
  if (it == running_.rend()) return nullptr;
  std::unique_ptr<Sequence> s = std::move(*it);
  running_.erase(std::next(it).base());
  // Its full blocks stay in the prefix cache: the recompute may find them there.
  s->kv->PublishFullBlocks(s->tokens, s->n_computed);
  s->kv->ReleaseAll();
  s->kv.reset();
  s->n_computed = 0;
  ++s->preemptions;
  Sequence* const p = s.get();
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.preemptions;
  waiting_.push_front(std::move(s));
  CountWaitingLocked();
  return p;
}

void Scheduler::Admit() {
  while (static_cast<int64_t>(running_.size()) < opts_.max_running) {
    std::unique_ptr<Sequence> seq;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (waiting_.empty()) break;
      // FCFS, but interactive requests go before batch ones.
      auto it = std::find_if(waiting_.begin(), waiting_.end(),
                             [](const auto& s) { return s->req.interactive; });
      if (it == waiting_.end()) it = waiting_.begin();
      // A group is admitted whole, so that its members can fork from the leader.
      const int64_t members = 1 + static_cast<int64_t>((*it)->followers.size());
      if (!running_.empty() &&
          static_cast<int64_t>(running_.size()) + members > opts_.max_running) {
        break;
      }
      seq = std::move(*it);
      waiting_.erase(it);
      CountWaitingLocked();
    }
    if (seq->req.sink->Cancelled()) {
      Finish(*seq, FinishReason::kCancelled);
      continue;
    }
    seq->kv = std::make_unique<SequenceKv>(&kv_);
    const int64_t n = static_cast<int64_t>(seq->tokens.size());
    // At least the last token is computed, so it yields logits.
    const int64_t cached = seq->kv->AttachPrefix(seq->tokens, n - 1);
    if (!seq->kv->Reserve(n)) {
      seq->kv.reset();
      if (running_.empty()) {
        Finish(*seq, FinishReason::kError,
               ResourceExhausted("the KV cache cannot hold this request's " + std::to_string(n) +
                                 " tokens"));
        continue;
      }
      // Wait for running sequences to free blocks; keep its place at the front.
      std::lock_guard<std::mutex> lock(mu_);
      waiting_.push_front(std::move(seq));
      CountWaitingLocked();
      break;
    }
    seq->n_computed = cached;
    if (seq->preemptions == 0) {
      seq->cached_prompt = cached;
      seq->admitted = Clock::now();
      seq->req.sink->OnAdmitted();
    }
    running_.push_back(std::move(seq));
  }
  // A request leaves `waiting` here; without this it would show in neither gauge until the
  // step ends, and an observer could take the server for idle.
  std::lock_guard<std::mutex> lock(mu_);
  stats_.running = static_cast<int64_t>(running_.size());
  stats_.kv = kv_.Stats();
}

bool Scheduler::Step() {
  // Drop cancelled sequences first: their blocks go back to the pool before we allocate. One in
  // flight is finished when its batch lands (its blocks are in use until then).
  for (auto& s : running_) {
    if (!s->done && !s->in_flight && s->req.sink->Cancelled()) Finish(*s, FinishReason::kCancelled);
  }
  std::erase_if(running_, [](const auto& s) { return s->done; });
  // Waiting requests whose clients left must not hold queue slots until they would have been
  // admitted (new requests would get "queue full" meanwhile).
  std::vector<std::unique_ptr<Sequence>> abandoned;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if ((*it)->req.sink->Cancelled()) {
        abandoned.push_back(std::move(*it));
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
    if (!abandoned.empty()) CountWaitingLocked();
  }
  for (auto& s : abandoned) Finish(*s, FinishReason::kCancelled);  // members still wanted requeue
  Admit();
  if (running_.empty()) return false;

  // Decoding sequences need one more position each; when the pool is dry, preempt the newest
  // (not one in flight: if only those are left, the sequence waits for their batches to land).
  std::vector<Sequence*> blocked;
  for (size_t i = 0; i < running_.size(); ++i) {
    Sequence& s = *running_[i];
    const int64_t n = static_cast<int64_t>(s.tokens.size());
    if (s.in_flight || s.n_computed != n - 1) continue;  // still prefilling: blocks reserved
    // The write at n - 1 may land in a block shared with a group member: copied first.
    while (!s.kv->Reserve(n, n - 1)) {
      Sequence* p = PreemptNewest();
      if (p == nullptr) {
        blocked.push_back(&s);
        break;
      }
      if (p == &s) break;
    }
  }
  if (running_.empty()) return true;

  // Decode tokens first (they keep streams flowing), then prefill chunks within the budget.
  // In a pipeline each batch takes its share of the decoding sequences, so that the devices
  // have as many batches to work on as there are devices.
  Flight fl;
  auto ready = [&](const Sequence& s) {
    return !s.in_flight && s.kv && std::find(blocked.begin(), blocked.end(), &s) == blocked.end();
  };
  int64_t decoding = 0;
  for (auto& s : running_) decoding += s->n_computed == static_cast<int64_t>(s->tokens.size()) - 1;
  const int64_t depth = PipelineDepth();
  int64_t decode_cap = (decoding + depth - 1) / depth;
  int64_t budget = opts_.step_token_budget;
  // Short of memory: no step outgrows the buffers the ones before it grew (prompt chunks and
  // recomputed sequences wait or go in smaller pieces).
  if (tight_) budget = std::min(budget, std::max(largest_step_, kTightStepFloor));
  for (auto& s : running_) {
    const int64_t n = static_cast<int64_t>(s->tokens.size());
    if (s->n_computed == n - 1 && ready(*s) && budget > 0 && decode_cap > 0) {
      fl.segs.push_back({s.get()->kv.get(), {&s->tokens[n - 1], 1}, n - 1, false});
      fl.owners.push_back(s.get());
      --budget;
      --decode_cap;
    }
  }
  fl.decoded = static_cast<int64_t>(fl.segs.size());
  budget = step_time_.PrefillCap(fl.decoded, budget);
  for (auto& s : running_) {
    const int64_t n = static_cast<int64_t>(s->tokens.size());
    if (s->n_computed < n - 1 && ready(*s) && budget > 0) {
      const int64_t len = std::min(budget, n - s->n_computed);
      fl.segs.push_back({s->kv.get(),
                         {&s->tokens[s->n_computed], static_cast<size_t>(len)},
                         s->n_computed,
                         false});
      fl.owners.push_back(s.get());
      budget -= len;
      fl.prompt_computed += len;
    }
  }
  const bool submitting = !fl.segs.empty();
  if (submitting) {
    largest_step_ = std::max(largest_step_, fl.decoded + fl.prompt_computed);
    fl.start = Clock::now();
    if (Status st = fp_.Submit(fl.segs); !st.ok()) {
      spdlog::error("forward pass failed: {}", st.ToString());
      for (Sequence* s : fl.owners) Finish(*s, FinishReason::kError, st);
      std::erase_if(running_, [](const auto& s) { return s->done; });
      return true;
    }
    for (Sequence* s : fl.owners) s->in_flight = true;
    flights_.push_back(std::move(fl));
  }
  if (flights_.empty()) return true;
  // Land the oldest batch once the pipeline is full, or when nothing more can be sent.
  if (static_cast<int64_t>(flights_.size()) >= depth || !submitting) LandOldest();
  return true;
}

int64_t Scheduler::PipelineDepth() const {
  // One batch in flight per device of the pipeline keeps them all busy; the devices of a tensor
  // split compute each layer of a batch together.
  const auto stages = std::count_if(opts_.remote_layers.begin(), opts_.remote_layers.end(),
                                    [](const auto& r) { return r->slice() == nullptr; });
  return stages == 0 || opts_.pipeline_micro_batches == 1 ? 1 : stages + 1;
}

void Scheduler::LandAll() {
  while (!flights_.empty()) LandOldest();
}

void Scheduler::LandOldest() {
  Flight fl = std::move(flights_.front());
  flights_.pop_front();
  std::vector<float> logits;
  std::vector<Status> failures;
  Status st = fp_.Collect(&logits, &failures);
  for (Sequence* s : fl.owners) s->in_flight = false;
  // Alone in the pipeline, the time from submit to landing is the step's.
  if (PipelineDepth() == 1) {
    step_time_.Observe(fl.decoded, fl.prompt_computed, MsBetween(fl.start, Clock::now()));
  }
  if (!st.ok()) {
    spdlog::error("forward pass failed: {}", st.ToString());
    for (Sequence* s : fl.owners) Finish(*s, FinishReason::kError, st);
    std::erase_if(running_, [](const auto& s) { return s->done; });
    return;
  }
  if (fp_.remote_failed()) {
    // The device of a remote range may have lost the keys and values of every sequence and of
    // the cached prefixes: the batches in flight land (failed too), the running sequences fail
    // with the step's error, and the prefix cache is forgotten, so that later requests compute
    // everything afresh.
    const Status why = failures.empty() ? Unavailable("a remote layer range failed") : failures[0];
    while (!flights_.empty()) {
      Flight rest = std::move(flights_.front());
      flights_.pop_front();
      std::vector<float> ignored;
      (void)fp_.Collect(&ignored, nullptr);
      for (Sequence* s : rest.owners) s->in_flight = false;
    }
    for (auto& s : running_) {
      if (!s->done) Finish(*s, FinishReason::kError, why);
    }
    std::erase_if(running_, [](const auto& s) { return s->done; });
    kv_.DropCached();
    return;
  }
  // A failed flash read costs only the sequences that needed it; their KV goes back to the pool
  // and the others carry on.
  for (size_t i = 0; i < fl.segs.size(); ++i) {
    if (failures[i].ok()) continue;
    spdlog::error("a request failed in the forward pass: {}", failures[i].ToString());
    Finish(*fl.owners[i], FinishReason::kError, failures[i]);
  }

  const int64_t n_vocab = model_.config().n_vocab;
  int64_t generated = 0;
  for (size_t i = 0; i < fl.segs.size(); ++i) {
    Sequence& s = *fl.owners[i];
    if (s.done) continue;
    s.n_computed += static_cast<int64_t>(fl.segs[i].tokens.size());
    const int64_t n = static_cast<int64_t>(s.tokens.size());
    s.kv->PublishFullBlocks(s.tokens, s.n_computed);
    if (s.n_computed < n) continue;  // mid-prompt chunk: no token yet

    std::span<const float> row(&logits[i * n_vocab], n_vocab);
    if (!s.followers.empty()) {
      // The group's prompt is computed: each member takes the blocks, the partial last one
      // copy-on-write, and samples its first token from the same logits.
      std::vector<std::unique_ptr<Sequence>> forked = std::move(s.followers);
      s.followers.clear();
      for (auto& f : forked) {
        f->kv = std::make_unique<SequenceKv>(&kv_);
        f->kv->ForkFrom(*s.kv, s.n_computed);
        f->n_computed = s.n_computed;
        f->cached_prompt = s.n_computed;
        f->admitted = s.admitted;
        if (f->req.sink->Cancelled()) {
          Finish(*f, FinishReason::kCancelled);
          continue;
        }
        EmitToken(*f, row);
        ++generated;
        if (!f->done) running_.push_back(std::move(f));
      }
    }
    // A sequence cancelled while its batch was in flight ends here.
    if (s.req.sink->Cancelled()) {
      Finish(s, FinishReason::kCancelled);
      continue;
    }
    EmitToken(s, row);
    ++generated;
  }
  std::erase_if(running_, [](const auto& s) { return s->done; });
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.generated_tokens += generated;
    stats_.prompt_tokens += fl.prompt_computed;
    ++stats_.steps;
    stats_.ffn = fp_.ffn().counters();
  }
}

void Scheduler::EmitToken(Sequence& s, std::span<const float> row) {
  TokenEvent ev;
  const size_t n_forced = s.req.forced_tokens.size();
  if (static_cast<size_t>(s.n_generated) < n_forced) {
    ev.token = s.req.forced_tokens[s.n_generated];
  } else if (!s.req.logit_bias.empty()) {
    std::vector<float> biased(row.begin(), row.end());
    for (const auto& [id, bias] : s.req.logit_bias) biased[id] += bias;
    ev.token = s.sampler->Sample(biased);
  } else {
    ev.token = s.sampler->Sample(row);
  }
  s.sampler->Accept(ev.token);
  if (s.req.logprobs || s.req.top_logprobs > 0) {
    FillLogprobs(row, ev.token, s.req.top_logprobs, &ev);
  }
  s.tokens.push_back(ev.token);
  ++s.n_generated;
  if (!s.has_first_token) {
    s.has_first_token = true;
    s.first_token = Clock::now();
  }
  const bool keep = s.req.sink->OnToken(ev);
  if (opts_.is_eog(ev.token) || !keep) {
    Finish(s, FinishReason::kStop);
  } else if (static_cast<int64_t>(s.tokens.size()) >= opts_.n_ctx) {
    // Checked before max_tokens: a request whose max_tokens was defaulted to the room left
    // ends at the context limit, and metrics should say so.
    Finish(s, FinishReason::kContext);
  } else if (s.n_generated >= s.req.max_tokens) {
    Finish(s, FinishReason::kLength);
  }
}

void Scheduler::ApplyMemoryPlan(MemoryPlan plan) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_plan_ = std::move(plan);
  }
  cv_.notify_all();
}

void Scheduler::ShrinkNeuronCacheNow(size_t bytes) {
  if (!opts_.neuron_store || bytes >= opts_.neuron_store->capacity_bytes()) return;
  const auto start = std::chrono::steady_clock::now();
  const Status st = opts_.neuron_store->Resize(bytes);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!st.ok()) {
    spdlog::warn("memory: neuron cache shrink to {} bytes at once failed: {}", bytes,
                 st.ToString());
    return;
  }
  spdlog::info(
      "memory: neuron cache shrunk to {} MiB at once, in {:.1f} ms, not waiting for the "
      "step in flight",
      bytes >> 20, ms);
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
  int64_t preempted = 0;
  while (!running_.empty()) {
    PreemptNewest();
    ++preempted;
  }
  kv_.DropCached();
  opts_.remote_layers = std::move(*ranges);
  remote_kv_observer_.OnResize(kv_.n_blocks());
  spdlog::info("shard: {} remote layer ranges now; {} running sequences resume from the start",
               opts_.remote_layers.size(), preempted);
}

void Scheduler::ApplyPendingPlan() {
  std::optional<MemoryPlan> plan;
  {
    std::lock_guard<std::mutex> lock(mu_);
    plan.swap(pending_plan_);
  }
  if (!plan) return;
  // A plan may move KV blocks and change the FFN: the batches in flight land first.
  LandAll();
  const auto start = std::chrono::steady_clock::now();
  if (plan->kv_pool_bytes) {
    const int64_t want = static_cast<int64_t>(*plan->kv_pool_bytes) / kv_block_bytes_;
    ResizeKv(std::clamp(want, min_kv_blocks_, opts_.kv_blocks));
  }
  if (plan->threads && pool_) pool_->set_active_threads(*plan->threads);
  std::optional<double> sparsity;
  if (plan->sparsity && opts_.sparsity_level) {
    sparsity = opts_.sparsity_level->Set(*plan->sparsity);
    // The planner's levels are the profile's floats (0.3f for 0.3): only another level is news.
    if (std::fabs(*sparsity - *plan->sparsity) > kSameSparsity) {
      spdlog::info("memory plan {}: sparsity {} is not a level this server may run at; {} instead",
                   plan->version, *plan->sparsity, *sparsity);
    }
  }
  if (plan->tight) {
    tight_ = *plan->tight;
    if (opts_.neuron_store) opts_.neuron_store->set_layer_staging(!tight_);
  }
  if (plan->neuron_cache_bytes && opts_.neuron_store) {
    const Status st = opts_.neuron_store->Resize(*plan->neuron_cache_bytes);
    if (!st.ok()) {
      spdlog::warn("memory plan {}: neuron cache resize to {} bytes failed: {}", plan->version,
                   *plan->neuron_cache_bytes, st.ToString());
    }
  }
  const auto now = std::chrono::steady_clock::now();
  const double ms = std::chrono::duration<double, std::milli>(now - plan->decided).count();
  const double apply_ms = std::chrono::duration<double, std::milli>(now - start).count();
  spdlog::info(
      "memory plan {} applied ({}): neuron cache {} MiB, KV pool {} blocks ({} MiB), threads {}, "
      "sparsity {}{}, {:.1f} ms after the decision ({:.1f} of them applying it)",
      plan->version, plan->cause,
      plan->neuron_cache_bytes ? std::to_string(*plan->neuron_cache_bytes >> 20) : "kept",
      kv_.n_blocks(), kv_.Stats().mapped_bytes >> 20,
      plan->threads ? std::to_string(*plan->threads) : "kept",
      sparsity ? fmt::format("{}", *sparsity) : "kept",
      tight_ ? fmt::format(", tight (steps of at most {} tokens, no layer staging)",
                           std::max(largest_step_, kTightStepFloor))
             : "",
      ms, apply_ms);
  std::lock_guard<std::mutex> lock(mu_);
  if (sparsity) stats_.sparsity = sparsity;
  stats_.kv = kv_.Stats();
  stats_.memory_plan_version = plan->version;
  stats_.memory_plan_latency_ms = ms;
}

void Scheduler::ResizeKv(int64_t blocks) {
  if (blocks == kv_.n_blocks()) return;
  // The newest sequences give their blocks back first, as when decoding runs the pool dry; the
  // full ones stay in the prefix cache while the smaller pool has room for them.
  int64_t preempted = 0;
  while (kv_.used() > blocks && !running_.empty()) {
    PreemptNewest();
    ++preempted;
  }
  std::unordered_map<BlockId, BlockId> moved;
  const Status st = kv_.Resize(blocks, &moved);
  if (!st.ok()) {
    spdlog::warn("memory plan: KV pool resize to {} blocks failed: {}", blocks, st.ToString());
    return;
  }
  for (auto& s : running_) {
    if (s->kv) s->kv->Remap(moved);
  }
  if (preempted > 0) {
    spdlog::info("memory plan: {} sequences preempted to shrink the KV pool to {} blocks",
                 preempted, blocks);
  }
}

void Scheduler::Loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] {
        return draining_ || pending_plan_ || pending_remote_ || !waiting_.empty() ||
               !running_.empty();
      });
      if (draining_) {
        const bool idle = waiting_.empty() && running_.empty();
        if (idle) break;
        if (Clock::now() >= drain_deadline_) {
          // Out of time: cancel what is left (cancelling a group leader queues its members,
          // hence the loop).
          lock.unlock();
          LandAll();
          for (auto& s : running_) Finish(*s, FinishReason::kCancelled);
          running_.clear();
          for (;;) {
            std::deque<std::unique_ptr<Sequence>> rest;
            {
              std::lock_guard<std::mutex> l(mu_);
              rest = std::move(waiting_);
              waiting_.clear();
              CountWaitingLocked();
            }
            if (rest.empty()) break;
            for (auto& s : rest) Finish(*s, FinishReason::kCancelled);
          }
          break;
        }
      }
    }
    ApplyPendingRemote();
    ApplyPendingPlan();
    Step();
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.running = static_cast<int64_t>(running_.size());
      stats_.kv = kv_.Stats();
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  stats_.running = 0;
  stats_.waiting = 0;
  stats_.kv = kv_.Stats();
}

}  // namespace sparrow
