#pragma once
// ModelSwitcher: which model serves, for models on demand (models_dir) and idle sleep
// (sleep_idle_seconds). One engine at a time, as ServerContext::served() has it:
// - A request naming a model of models_dir that is not loaded has it loaded while the old one
//   keeps serving; then the old one admits nothing more, its running and queued requests finish
//   (none is cancelled, so no answer is lost), the new one is swapped in and the old one freed.
//   Requests arriving meanwhile wait for the switch, at most model_switch_wait_ms; past it they
//   get Unavailable (HTTP 503 + Retry-After) while the switch goes on. A file that fails to load
//   leaves the old model serving, and every request waiting for it gets the error.
// - After sleep_idle_seconds with nothing running, queued or asked for, the model is unloaded
//   (weights unmapped, KV pool, scratch, caches and compute threads freed, the allocator's free
//   pages returned): served() is null and the model "sleeping"; the next request loads it again.
// One thread does every load, drain and unload, so switches are serialized; a request holding
// its model (EngineFacade) keeps it alive until its last token whatever happens meanwhile.
// Thread-safe.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/common/result.h"

namespace sparrow::server {

struct ServedModel;
struct ServerContext;

// What a listed model is doing.
enum class ModelState {
  kLoaded,     // serving
  kSleeping,   // the model last served, unloaded after being idle: the next request loads it
  kLoading,    // being loaded for a request (the old one may still serve meanwhile)
  kAvailable,  // in models_dir, not loaded
};
const char* ModelStateName(ModelState s);  // "loaded", "sleeping", "loading", "available"

// One model clients may name.
struct ModelEntry {
  std::string id;         // what clients name in "model": the file name without ".gguf"
  std::string file_name;  // "stories260K.gguf"
  std::string path;
  int64_t bytes = 0;
  int64_t modified_s = 0;  // the file last written, seconds since the Unix epoch
  ModelState state = ModelState::kAvailable;
};

class ModelSwitcher {
 public:
  // `ctx` (its config, served() and SwapServed) must outlive the switcher; its first model is
  // served already. Starts the switching thread.
  explicit ModelSwitcher(ServerContext& ctx);
  ~ModelSwitcher();  // Stop()

  // The model `id` names ("": the loaded one, or the sleeping one), loaded when it is not:
  // NotFound naming `id` when it is not served (not in models_dir, or without models_dir not
  // the served model); Unavailable when the wait runs out or the server stops; Internal
  // naming the file when it fails to load.
  Result<std::shared_ptr<ServedModel>> Acquire(const std::string& id);
  // Every model clients may name with its state, by id; without models_dir the served one.
  std::vector<ModelEntry> List() const;
  // The model loaded, or the one sleeping ("" only before the first model).
  std::string current_id() const;
  bool sleeping() const;
  // Unloads `id` now, as an idle sleep does (the next request naming it loads it again):
  // Ollama's keep_alive 0. Ok, doing nothing, when `id` is not the model loaded; Unavailable
  // while a switch or a reload is under way, or while the model runs or queues requests.
  Status SleepNow(const std::string& id);
  // The same once `id` is idle (after the answer that asked; a request for it meanwhile keeps
  // it loaded). Returns at once; the switcher's thread does it.
  void SleepWhenIdle(const std::string& id);

  // Ends the thread; later Acquire calls that need a load get Unavailable. Idempotent.
  void Stop();

 private:
  void Run();
  // Loads wanted_, drains the old model and swaps (mu_ held on entry and exit).
  void SwitchTo(std::unique_lock<std::mutex>& lock);
  // Unloads the served model when it has been idle long enough (mu_ held).
  void MaybeSleep(std::unique_lock<std::mutex>& lock);
  // Takes `cur` (the model served) out and frees it, unless a reload holds the swap (mu_ held).
  bool Sleep(std::shared_ptr<ServedModel> cur);
  // Unloads the model SleepWhenIdle named once it is idle (mu_ held).
  void SleepAsked();
  // The entry `id` names, from models_dir or the served model; NotFound otherwise.
  Result<ModelEntry> Find(const std::string& id) const;

  using Clock = std::chrono::steady_clock;
  ServerContext& ctx_;
  const std::chrono::milliseconds sleep_after_;  // 0: never
  const std::chrono::milliseconds wait_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;            // guarded by mu_
  std::string wanted_id_;        // the switch asked for, "" when none; guarded by mu_
  std::string wanted_path_;      // guarded by mu_
  bool draining_ = false;        // the old model admits nothing more; guarded by mu_
  uint64_t finished_ = 0;        // switches done or failed; guarded by mu_
  std::string last_id_;          // the last switch's model; guarded by mu_
  Status last_status_;           // and how it went; guarded by mu_
  std::string asleep_id_;        // the model unloaded for idleness, "" when one is loaded
  std::string asleep_path_;      // guarded by mu_
  std::string sleep_asked_;      // SleepWhenIdle's model, "" when none; guarded by mu_
  Clock::time_point last_used_;  // a request last asked for the model or ran; guarded by mu_
  std::thread thread_;
};

}  // namespace sparrow::server
