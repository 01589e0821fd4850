#include "server/admin/admin_controller.h"

#include <spdlog/spdlog.h>

#include "server/core/model_dir.h"

namespace sparrow::server {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
constexpr size_t kMaxSamples = 61;  // one a second: a minute and the sample before it

std::string ResultName(const Status& s) {
  if (s.ok()) return "ok";
  switch (s.code()) {
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    default:
      return "error";
  }
}

}  // namespace

Result<std::shared_ptr<AdminController>> AdminController::Start(ServerContext& ctx) {
  std::shared_ptr<AdminController> a(new AdminController(ctx));
  a->described_ = ctx.served();
  a->model_ = DescribeModel(*ctx.served());
  SPARROW_ASSIGN_OR_RETURN(a->audit_, AuditLog::Open(ctx.config.audit_log, &ctx.metrics));
  a->thread_ = std::thread([p = a.get()] { p->Run(); });
  return a;
}

AdminController::~AdminController() {
  Stop();
}

void AdminController::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void AdminController::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  auto next = Clock::now();
  while (!stop_) {
    lock.unlock();
    // Not kept across the wait below: an idle unload must be able to free the model at once.
    std::shared_ptr<ServedModel> served = ctx_.served();
    lock.lock();
    // Asleep, nothing is generated: the last count stands.
    const int64_t generated = served ? served->scheduler->Stats().generated_tokens
                                     : (samples_.empty() ? 0 : samples_.back().second);
    // A model switched in on demand (or woken) counts from zero: its samples start afresh.
    if (served && sampled_.lock() != served) {
      samples_.clear();
      sampled_ = served;
    }
    // A count read just before a reload's swap belongs to the old scheduler: not a sample of
    // the new one, which counts from zero.
    if (served == ctx_.served()) samples_.emplace_back(Clock::now(), generated);
    while (samples_.size() > kMaxSamples) samples_.pop_front();
    served.reset();
    if (hub_.subscribers() > 0) {
      lock.unlock();
      adminpb::Event e;
      *e.mutable_status() = Snapshot();
      hub_.Publish(std::move(e));
      lock.lock();
    }
    next += std::chrono::seconds(1);
    cv_.wait_until(lock, next, [&] { return stop_; });
  }
}

adminpb::ModelStatus AdminController::Model() const {
  const std::shared_ptr<ServedModel> served = ctx_.served();
  // Sleeping once its memory is given back (ModelSwitcher frees it before it says so); between
  // the swap and then, or while a switch loads the next one, "loading".
  const bool asleep = !served && ctx_.switcher && ctx_.switcher->sleeping();
  std::lock_guard<std::mutex> lock(mu_);
  // A model switched to on demand (models_dir) is described the first time it is seen; asleep,
  // the last one described stands, marked so.
  if (served && described_.lock() != served) {
    model_ = DescribeModel(*served);
    described_ = served;
  }
  adminpb::ModelStatus m = model_;
  m.set_state(served ? "loaded" : asleep ? "sleeping" : "loading");
  return m;
}

adminpb::ServerStatus AdminController::Snapshot() const {
  adminpb::ServerStatus s = CollectStatus(ctx_, Model());
  s.set_event_subscribers(static_cast<int64_t>(hub_.subscribers()));
  std::lock_guard<std::mutex> lock(mu_);
  if (!samples_.empty()) {
    // Against the sample closest to 10 s (60 s) ago; since start when younger than that.
    const auto now = Clock::now();
    const int64_t current = s.throughput().generated_tokens();
    auto rate = [&](std::chrono::seconds span) {
      const auto* base = &samples_.front();
      for (const auto& smp : samples_) {
        if (now - smp.first <= span) break;
        base = &smp;
      }
      const double dt = std::chrono::duration<double>(now - base->first).count();
      return dt > 0.5 ? static_cast<double>(current - base->second) / dt : 0.0;
    };
    s.mutable_throughput()->set_tokens_per_s_10s(rate(std::chrono::seconds(10)));
    s.mutable_throughput()->set_tokens_per_s_60s(rate(std::chrono::seconds(60)));
  }
  return s;
}

adminpb::DrainResponse AdminController::DrainState() const {
  const adminpb::ServerStatus s = Snapshot();
  adminpb::DrainResponse out;
  out.set_draining(s.draining());
  out.set_drained(s.drained());
  out.set_running(s.running());
  out.set_waiting(s.waiting());
  return out;
}

adminpb::ListRequestsResponse AdminController::Requests() const {
  adminpb::ListRequestsResponse out;
  for (const auto& r : ctx_.requests.List(false)) *out.add_data() = DescribeRequest(r, nullptr);
  return out;
}

adminpb::ListRequestsResponse AdminController::RequestsWithPrompts(const AdminCaller& who) {
  const std::vector<RequestSnapshot> list = ctx_.requests.List(true);
  const std::shared_ptr<ServedModel> served = ctx_.served();
  adminpb::ListRequestsResponse out;
  for (const auto& r : list) {
    *out.add_data() = DescribeRequest(r, served ? served->tokenizer.get() : nullptr);
  }
  Done(who, "list_prompts", json{{"requests", list.size()}}, Status::Ok());
  return out;
}

void AdminController::Done(const AdminCaller& who, const std::string& action, const json& args,
                           const Status& result) {
  const std::string name = ResultName(result);
  audit_->Record(who, action, args, name, result.ok() ? "" : result.message());
  adminpb::Event e;
  adminpb::ActionEvent* a = e.mutable_action();
  a->set_action(action);
  a->set_args_json(args.dump(-1, ' ', false, json::error_handler_t::replace));
  a->set_result(name);
  a->set_detail(result.ok() ? "" : result.message());
  a->set_remote(who.remote);
  a->set_key_id(who.key_id);
  hub_.Publish(std::move(e));
}

Status AdminController::Cancel(const AdminCaller& who, const std::string& id) {
  Status s = ctx_.requests.Cancel(id) ? Status::Ok()
                                      : NotFound("no request '" + id +
                                                 "' is being served (GET "
                                                 "/admin/v1/requests lists them)");
  Done(who, "cancel", json{{"id", id}}, s);
  return s;
}

Status AdminController::Drain(const AdminCaller& who) {
  const bool was = ctx_.draining.exchange(true);
  if (!was) spdlog::warn("admin: draining: new generations are refused until resume");
  Done(who, "drain", json::object(), Status::Ok());
  return Status::Ok();
}

Status AdminController::Resume(const AdminCaller& who) {
  const bool was = ctx_.draining.exchange(false);
  if (was) spdlog::warn("admin: resumed: admitting generations again");
  Done(who, "resume", json::object(), Status::Ok());
  return Status::Ok();
}

Result<adminpb::ListModelsResponse> AdminController::Models() const {
  if (ctx_.config.model_dir.empty()) {
    return InvalidArgument(
        "no model_dir is configured: start sparrowd with --model-dir DIR to "
        "switch models");
  }
  SPARROW_ASSIGN_OR_RETURN(const std::vector<ModelFile> files, ListModelDir(ctx_.config.model_dir));
  const std::string serving = Model().file();
  const std::vector<ModelEntry> served = ctx_.ListModels();
  adminpb::ListModelsResponse out;
  for (const ModelFile& m : files) {
    adminpb::ModelFile* f = out.add_data();
    f->set_name(m.name);
    f->set_bytes(m.bytes);
    f->set_serving(m.name == serving);
    ModelState state = ModelState::kAvailable;
    for (const ModelEntry& e : served) {
      if (e.file_name == m.name) state = e.state;
    }
    f->set_loaded(state == ModelState::kLoaded);
    f->set_state(ModelStateName(state));
  }
  return out;
}

Result<adminpb::ReloadResponse> AdminController::Reload(const AdminCaller& who,
                                                        const std::string& name,
                                                        ReloadRefusal* refusal) {
  const json args = {{"model", name}};
  auto refuse = [&](Status s, std::string code) -> Result<adminpb::ReloadResponse> {
    refusal->status = s;
    refusal->code = std::move(code);
    Done(who, "reload", args, s);
    return s;
  };
  if (ctx_.config.model_dir.empty()) {
    return refuse(InvalidArgument("reload is off: sparrowd was started without --model-dir"),
                  "reload_disabled");
  }
  std::unique_lock<std::mutex> one_at_a_time(reload_mu_, std::try_to_lock);
  // A switch on demand or an idle unload (ModelSwitcher) swaps too: it waits for them.
  std::unique_lock<std::mutex> one_swap(ctx_.swap_mu, std::defer_lock);
  if (one_at_a_time.owns_lock()) one_swap.lock();
  if (!one_at_a_time.owns_lock()) {
    return refuse(Unavailable("another reload is in progress; retry when it is done"),
                  "reload_in_progress");
  }
  auto file = ResolveModelName(ctx_.config.model_dir, name);
  if (!file.ok()) {
    return refuse(file.status(), file.status().code() == StatusCode::kNotFound
                                     ? "model_not_found"
                                     : "invalid_model_name");
  }
  // Loaded while the old model serves, so a file that fails leaves everything as it was. The
  // server's sparsity and neuron cache settings go with it where the new model can take them
  // (a profile of its shape, a converted file for --cache-mb); where it cannot, it is served
  // without them, and the log says which and why.
  spdlog::info("admin: reload: loading {}", file->path);
  ServerConfig load_config = ctx_.config;
  std::shared_ptr<ServedModel> serving = ctx_.served();
  auto next = LoadServedModel(load_config, file->path, "", ctx_.connect_workers, serving.get());
  const bool has_settings =
      load_config.sparsity != "0" || !load_config.profile.empty() || load_config.cache_mb >= 0;
  if (!next.ok() && has_settings && next.status().code() != StatusCode::kNotFound) {
    const Status with_settings = next.status();
    load_config.sparsity.assign(1, '0');  // (not = "0": GCC 12 misreports that as -Wrestrict)
    load_config.profile.clear();
    load_config.cache_mb = -1;
    next = LoadServedModel(load_config, file->path, "", ctx_.connect_workers, serving.get());
    if (next.ok()) {
      spdlog::warn(
          "admin: reload: '{}' cannot run with this server's sparsity and neuron cache settings "
          "({}); it is served without them, every neuron in memory",
          file->name, with_settings.message());
    }
  }
  serving.reset();
  if (!next.ok()) {
    spdlog::warn("admin: reload of {} failed, the old model keeps serving: {}", file->name,
                 next.status().message());
    std::string context = "the old model keeps serving; loading '";
    context.append(file->name).append("' failed");
    return refuse(next.status().WithContext(context), "model_load_failed");
  }
  // Drain: running and queued requests finish on the old model, up to shutdown_timeout_ms.
  // /ready says "reloading" meanwhile, so a balancer sends new requests elsewhere.
  ctx_.reloading.store(true);
  const bool was_draining = ctx_.draining.exchange(true);
  std::shared_ptr<ServedModel> old = ctx_.served();
  const auto deadline = Clock::now() + std::chrono::milliseconds(ctx_.config.shutdown_timeout_ms);
  for (; old;) {  // (null: the old model was asleep)
    const SchedulerStats st = old->scheduler->Stats();
    if (st.running == 0 && st.waiting == 0) break;
    if (Clock::now() >= deadline) {
      for (const auto& r : ctx_.requests.List(false)) ctx_.requests.Cancel(r.id);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const adminpb::ModelStatus described = DescribeModel(**next);
  // The operator's budget holds for the new model too, where it is not under its floor.
  if (old && old->memory && (*next)->memory) {
    if (const auto bytes = old->memory->stats().operator_budget_bytes) {
      const uint64_t floor = (*next)->memory->stats().floor_bytes;
      if (*bytes >= floor) {
        (*next)->memory->SetOperatorBudget(*bytes);
      } else {
        spdlog::warn(
            "admin: reload: the operator's budget {} is under the new model's floor {}; the "
            "device's budget applies",
            WholeMib(*bytes), WholeMib(floor));
      }
    }
  }
  ctx_.SwapServed(std::move(*next));
  {
    std::lock_guard<std::mutex> lock(mu_);
    model_ = described;
    described_ = ctx_.served();
    samples_.clear();  // the new scheduler counts from zero
  }
  if (!was_draining) ctx_.draining.store(false);
  ctx_.reloading.store(false);
  const std::string previous = old ? old->model_id : described.id();
  // Requests still on the old model (cancelled ones writing their last bytes) hold it; it goes
  // when they do.
  old.reset();
  spdlog::warn("admin: reload: now serving '{}' from {} (was '{}')", described.id(), file->path,
               previous);
  Done(who, "reload", args, Status::Ok());
  adminpb::ReloadResponse out;
  *out.mutable_model() = described;
  out.set_previous(previous);
  return out;
}

void AdminController::ReloadInBackground(std::shared_ptr<AdminController> self, AdminCaller who,
                                         std::string name, ReloadDone done) {
  std::thread([self = std::move(self), who = std::move(who), name = std::move(name),
               done = std::move(done)] {
    ReloadRefusal refusal;
    const Result<adminpb::ReloadResponse> result = self->Reload(who, name, &refusal);
    done(result, refusal);
  }).detach();
}

Status AdminController::SetLogLevel(const AdminCaller& who, const std::string& level) {
  static const char* kLevels[] = {"trace", "debug", "info", "warn", "error", "off"};
  Status s;
  if (std::find(std::begin(kLevels), std::end(kLevels), level) == std::end(kLevels)) {
    s = InvalidArgument("'level' must be trace, debug, info, warn, error or off, got '" + level +
                        "'");
  } else {
    spdlog::set_level(spdlog::level::from_str(level));
  }
  Done(who, "log_level", json{{"level", level}}, s);
  return s;
}

Result<adminpb::MemoryBudget> AdminController::Memory() const {
  const std::shared_ptr<ServedModel> served = ctx_.served();
  if (!served && ctx_.switcher && ctx_.switcher->sleeping()) {
    return Unavailable("the model '" + ctx_.model_id() +
                       "' is asleep (sleep_idle_seconds): it holds no memory and has no budget "
                       "until the next request loads it");
  }
  if (!served || !served->memory) {
    // Not a failure to retry (503, gRPC UNAVAILABLE read as "cannot reach"): the server was
    // started without it.
    return Unsupported(
        "memory budget control is off (memory_pressure 0): start sparrowd with memory_pressure 1 "
        "or 2");
  }
  adminpb::MemoryBudget out = DescribeMemory(served->memory->stats(), served->scheduler->Stats());
  out.set_model(served->model_id);  // each loaded model has its own budget and planner
  return out;
}

Status AdminController::SetMemoryBudget(const AdminCaller& who, std::optional<uint64_t> bytes) {
  const std::shared_ptr<ServedModel> served = ctx_.served();
  Status s;
  if (!served || !served->memory) {
    s = Memory().status();
  } else if (const uint64_t floor = served->memory->stats().floor_bytes; bytes && *bytes < floor) {
    // Accepted, it would starve every request until cleared; the least the model runs in is
    // what the operator needs to know.
    s = InvalidArgument("a budget of " + std::to_string(*bytes) +
                        " bytes is under this model's floor of " + std::to_string(floor) +
                        " bytes (its weights, scratch and the KV of one request of the "
                        "configured context), the least it runs in");
  } else {
    served->memory->SetOperatorBudget(bytes);
  }
  Done(who, bytes ? "memory_budget_set" : "memory_budget_clear",
       bytes ? json{{"bytes", *bytes}} : json::object(), s);
  return s;
}

Status AdminController::Replan(const AdminCaller& who) {
  const std::shared_ptr<ServedModel> served = ctx_.served();
  Status s;
  if (!served || !served->memory) {
    s = Memory().status();
  } else {
    served->memory->Replan("operator: replan");
  }
  Done(who, "memory_replan", json::object(), s);
  return s;
}

void AdminController::RecordRefused(const AdminCaller& who, const std::string& action,
                                    const std::string& why) {
  Done(who, action, json::object(), InvalidArgument(why));
}

std::shared_ptr<EventSubscription> AdminController::Subscribe(std::function<void()> on_ready) {
  auto sub = hub_.Subscribe(std::move(on_ready));
  // A first snapshot at once, so a new watcher does not wait a second for anything.
  adminpb::Event e;
  *e.mutable_status() = Snapshot();
  hub_.SendTo(*sub, std::move(e));
  return sub;
}

}  // namespace sparrow::server
