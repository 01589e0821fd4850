#include "server/core/model_switcher.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "server/core/model_dir.h"
#include "server/core/served_model.h"
#include "server/core/server_context.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace sparrow::server {
namespace {

using Clock = std::chrono::steady_clock;

// Gives the allocator's free pages back to the system, so that RSS falls once a model's heap
// (tokenizer, scratch, chat template) is freed; the mapped parts (weights, KV pool) are unmapped
// by their owners.
void ReturnFreedMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

// The operator's budget holds for the next model too, where it is not under its floor.
void CarryOperatorBudget(const ServedModel& from, ServedModel& to) {
  if (!from.memory || !to.memory) return;
  const auto bytes = from.memory->stats().operator_budget_bytes;
  if (!bytes) return;
  if (*bytes >= to.memory->stats().floor_bytes) {
    to.memory->SetOperatorBudget(*bytes);
  } else {
    spdlog::warn(
        "models: the operator's budget of {} bytes is under the floor of '{}'; the "
        "device's budget applies",
        *bytes, to.model_id);
  }
}

bool Idle(const ServedModel& m) {
  const SchedulerStats s = m.scheduler->Stats();
  return s.running == 0 && s.waiting == 0;
}

}  // namespace

const char* ModelStateName(ModelState s) {
  switch (s) {
    case ModelState::kLoaded:
      return "loaded";
    case ModelState::kSleeping:
      return "sleeping";
    case ModelState::kLoading:
      return "loading";
    case ModelState::kAvailable:
      break;
  }
  return "available";
}

ModelSwitcher::ModelSwitcher(ServerContext& ctx)
    : ctx_(ctx),
      sleep_after_(std::chrono::seconds(ctx.config.sleep_idle_seconds)),
      wait_(std::chrono::milliseconds(ctx.config.model_switch_wait_ms)),
      last_used_(Clock::now()) {
  thread_ = std::thread([this] { Run(); });
}

ModelSwitcher::~ModelSwitcher() {
  Stop();
}

void ModelSwitcher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string ModelSwitcher::current_id() const {
  if (const auto cur = ctx_.served()) return cur->model_id;
  std::lock_guard<std::mutex> lock(mu_);
  return asleep_id_;
}

bool ModelSwitcher::sleeping() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !asleep_id_.empty() && !ctx_.served();
}

Result<ModelEntry> ModelSwitcher::Find(const std::string& id) const {
  for (const ModelEntry& e : List()) {
    if (e.id == id) return e;
  }
  return NotFound("The model '" + id + "' does not exist; GET /v1/models lists the models " +
                  "this server serves");
}

std::vector<ModelEntry> ModelSwitcher::List() const {
  const std::shared_ptr<ServedModel> cur = ctx_.served();
  std::string asleep_id, asleep_path, loading;
  {
    std::lock_guard<std::mutex> lock(mu_);
    asleep_id = asleep_id_;
    asleep_path = asleep_path_;
    loading = wanted_id_;
  }
  const std::string loaded = cur ? cur->model_id : "";
  auto state_of = [&](const std::string& id) {
    if (id == loaded) return ModelState::kLoaded;
    if (id == loading) return ModelState::kLoading;
    if (id == asleep_id) return ModelState::kSleeping;
    return ModelState::kAvailable;
  };
  std::vector<ModelEntry> out;
  const std::string& dir = ctx_.config.models_dir;
  if (!dir.empty()) {
    const auto files = ListModelDir(dir);
    if (!files.ok()) {
      spdlog::warn("models: {}", files.status().message());
    } else {
      for (const ModelFile& f : *files) {
        ModelEntry e;
        e.id = ModelIdFromPath(f.name);
        e.file_name = f.name;
        e.path = f.path;
        e.bytes = f.bytes;
        e.modified_s = f.modified_s;
        e.state = state_of(e.id);
        out.push_back(std::move(e));
      }
    }
  }
  // The model serving (or asleep) is listed even when its file left the directory.
  const std::string path = cur ? cur->path : asleep_path;
  const std::string id = cur ? loaded : asleep_id;
  if (!id.empty() &&
      std::none_of(out.begin(), out.end(), [&](const ModelEntry& e) { return e.id == id; })) {
    const ModelFile f = StatModelFile(path);
    ModelEntry e;
    e.id = id;
    e.file_name = f.name;
    e.path = path;
    e.bytes = f.bytes;
    e.modified_s = f.modified_s;
    e.state = state_of(id);
    out.push_back(std::move(e));
  }
  return out;
}

Result<std::shared_ptr<ServedModel>> ModelSwitcher::Acquire(const std::string& id) {
  // A name that is neither loaded nor listed is refused before anything waits.
  std::string path;
  if (const auto cur = ctx_.served(); !id.empty() && !(cur && cur->model_id == id)) {
    SPARROW_ASSIGN_OR_RETURN(const ModelEntry e, Find(id));
    path = e.path;
  }
  std::unique_lock<std::mutex> lock(mu_);
  const auto deadline = Clock::now() + wait_;
  for (;;) {
    if (stop_) return Unavailable("the server is shutting down");
    std::shared_ptr<ServedModel> cur = ctx_.served();
    if (cur && !draining_ && (id.empty() || cur->model_id == id)) {
      last_used_ = Clock::now();
      if (sleep_asked_ == cur->model_id) sleep_asked_.clear();  // wanted again: it stays
      return cur;
    }
    if (wanted_id_.empty()) {
      // Nothing under way: this request starts the switch (or the wake-up).
      const std::string target = id.empty() ? asleep_id_ : id;
      if (target.empty()) return Unavailable("no model is loaded yet; retry later");
      const std::string target_path = target == asleep_id_ ? asleep_path_ : path;
      if (target_path.empty()) {  // it was loaded when this request came, and is no longer
        lock.unlock();
        auto e = Find(target);
        lock.lock();
        if (!e.ok()) return e.status();
        path = e->path;
        continue;
      }
      wanted_id_ = target;
      wanted_path_ = target_path;
      cv_.notify_all();
    }
    const std::string awaited = wanted_id_;
    const uint64_t seen = finished_;
    if (!cv_.wait_until(lock, deadline, [&] { return stop_ || finished_ != seen; })) {
      return Unavailable("the model '" + (id.empty() ? awaited : id) +
                         "' is not loaded yet (switching to '" + awaited + "'; waited " +
                         std::to_string(wait_.count()) + " ms, model_switch_wait_ms); retry later");
    }
    if (!last_status_.ok() && last_id_ == awaited && (id.empty() || id == awaited)) {
      return last_status_;
    }
  }
}

void ModelSwitcher::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  // Idleness is looked at a few times per sleep_idle_seconds (at most once a second).
  const auto poll = std::clamp<std::chrono::milliseconds>(
      sleep_after_ / 4, std::chrono::milliseconds(50), std::chrono::milliseconds(1000));
  while (!stop_) {
    if (!wanted_id_.empty()) {
      SwitchTo(lock);
      continue;
    }
    const auto switch_asked = [&] { return stop_ || !wanted_id_.empty(); };
    if (!sleep_asked_.empty()) {
      SleepAsked();
      // Still busy: looked at again soon, the answer that asked being just out.
      if (!sleep_asked_.empty()) cv_.wait_for(lock, std::chrono::milliseconds(10), switch_asked);
      continue;
    }
    const auto asked = [&] { return switch_asked() || !sleep_asked_.empty(); };
    if (sleep_after_.count() > 0) {
      MaybeSleep(lock);
      cv_.wait_for(lock, poll, asked);
    } else {
      cv_.wait(lock, asked);
    }
  }
}

void ModelSwitcher::SleepAsked() {
  std::shared_ptr<ServedModel> cur = ctx_.served();
  if (!cur || cur->model_id != sleep_asked_) {  // asleep already, or another model serves
    sleep_asked_.clear();
    return;
  }
  if (!Idle(*cur) || !Sleep(std::move(cur))) return;
  spdlog::info("models: '{}' unloaded (keep_alive 0); the next request loads it again",
               sleep_asked_);
  sleep_asked_.clear();
}

void ModelSwitcher::SleepWhenIdle(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  sleep_asked_ = id;
  cv_.notify_all();
}

void ModelSwitcher::SwitchTo(std::unique_lock<std::mutex>& lock) {
  const std::string id = wanted_id_;
  const std::string path = wanted_path_;
  lock.unlock();
  Status st;
  {
    // The admin API's reload swaps too: one at a time.
    std::lock_guard<std::mutex> one_swap(ctx_.swap_mu);
    std::shared_ptr<ServedModel> old = ctx_.served();
    if (!old || old->model_id != id) {
      const auto started = Clock::now();
      spdlog::info("models: loading '{}' from {}{}", id, path,
                   old ? " while '" + old->model_id + "' serves" : std::string());
      auto next = LoadServedModel(ctx_.config, path, id, ctx_.connect_workers, old.get());
      if (!next.ok()) {
        st = Internal("loading the model '" + id + "' from '" + path + "' failed" +
                      (old ? " ('" + old->model_id + "' keeps serving)" : std::string()) + ": " +
                      next.status().message());
        spdlog::warn("models: {}", st.message());
      } else {
        // The old model admits nothing more; what it runs and queues finishes (never cancelled).
        lock.lock();
        draining_ = true;
        lock.unlock();
        bool stopping = false;
        while (old && !Idle(*old) && !stopping) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
          lock.lock();
          stopping = stop_;
          lock.unlock();
        }
        if (old) CarryOperatorBudget(*old, **next);
        const std::string previous = old ? old->model_id : "(asleep)";
        ctx_.SwapServed(std::move(*next));
        // Requests still holding the old model (writing their last bytes) free it when they end.
        old.reset();
        ReturnFreedMemory();
        spdlog::info(
            "models: now serving '{}' (was {}), switched in {} ms", id, previous,
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count());
      }
    }
  }
  lock.lock();
  if (st.ok()) {
    asleep_id_.clear();
    asleep_path_.clear();
  }
  draining_ = false;
  wanted_id_.clear();
  wanted_path_.clear();
  last_id_ = id;
  last_status_ = st;
  ++finished_;
  last_used_ = Clock::now();
  cv_.notify_all();
}

void ModelSwitcher::MaybeSleep(std::unique_lock<std::mutex>& /*lock: held throughout*/) {
  std::shared_ptr<ServedModel> cur = ctx_.served();
  if (!cur) return;
  const auto now = Clock::now();
  if (!Idle(*cur)) {
    last_used_ = now;
    return;
  }
  if (now - last_used_ < sleep_after_) return;
  const std::string id = cur->model_id;
  if (!Sleep(std::move(cur))) return;  // a reload is under way
  spdlog::info("models: '{}' unloaded after {} s idle; the next request loads it again", id,
               std::chrono::duration_cast<std::chrono::seconds>(sleep_after_).count());
}

bool ModelSwitcher::Sleep(std::shared_ptr<ServedModel> cur) {
  // mu_ is held: no request is handed the model while it is taken out.
  std::unique_lock<std::mutex> one_swap(ctx_.swap_mu, std::try_to_lock);
  if (!one_swap.owns_lock() || ctx_.served() != cur) return false;
  // Freed with mu_ still held, so that "sleeping" (sleeping(), List()) is said only once the
  // memory is given back; requests asking meanwhile wait the few ms it takes.
  ctx_.SwapServed(nullptr);
  asleep_id_ = cur->model_id;
  asleep_path_ = cur->path;
  cur.reset();
  ReturnFreedMemory();
  return true;
}

Status ModelSwitcher::SleepNow(const std::string& id) {
  std::unique_lock<std::mutex> lock(mu_);
  std::shared_ptr<ServedModel> cur = ctx_.served();
  if (!cur || cur->model_id != id) return Status::Ok();
  if (!wanted_id_.empty() || !Idle(*cur) || !Sleep(std::move(cur))) {
    return Unavailable("the model '" + id + "' is busy (running requests, or being switched); " +
                       "retry the unload later");
  }
  spdlog::info("models: '{}' unloaded (keep_alive 0); the next request loads it again", id);
  return Status::Ok();
}

}  // namespace sparrow::server
