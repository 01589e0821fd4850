#pragma once
// AdminController: what the admin API does, for both frontends (HTTP /admin/v1/ and gRPC
// sparrow.admin.v1.Admin): status, the request list, cancel, drain and resume, the log level,
// and the event stream. Its answers are the admin.proto messages (server_status.h), which gRPC
// sends as they are and HTTP as JSON. Every action is checked, applied, written to the audit
// log and published as an event. A status thread samples throughput once a second and, while
// someone watches, publishes a status snapshot each time; with no subscriber it costs one Stats()
// call a second. Thread-safe.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/common/result.h"
#include "server/admin/audit_log.h"
#include "server/admin/event_hub.h"
#include "server/admin/server_status.h"
#include "server/core/server_context.h"

namespace sparrow::server {

class AdminController {
 public:
  // Opens the audit log (config key audit_log) and starts the status thread. `ctx` must
  // outlive the controller; store it in ctx.admin.
  static Result<std::shared_ptr<AdminController>> Start(ServerContext& ctx);
  ~AdminController();

  adminpb::ServerStatus Snapshot() const;
  // Whether it drains and what is left (the answer to drain and resume).
  adminpb::DrainResponse DrainState() const;
  adminpb::ListRequestsResponse Requests() const;
  // The detokenized prompt of each listed request is included: audited.
  adminpb::ListRequestsResponse RequestsWithPrompts(const AdminCaller& who);

  // NotFound naming the id when no such request is being served.
  Status Cancel(const AdminCaller& who, const std::string& id);
  // Stops admitting generations (new ones get 503 / UNAVAILABLE); running and queued ones
  // finish. Idempotent.
  Status Drain(const AdminCaller& who);
  Status Resume(const AdminCaller& who);
  // What a reload that did not happen returns: the status and a machine-readable code
  // (reload_disabled, reload_in_progress, invalid_model_name, model_not_found,
  // model_load_failed).
  struct ReloadRefusal {
    Status status;
    std::string code;
  };
  // Switches the server to the model `name` in model_dir: loads it while the old one serves,
  // then drains (running requests get up to shutdown_timeout_ms, then are cancelled), swaps and
  // admits again. A model that fails to load leaves the old one serving and returns the
  // loader's error. One reload at a time. Returns the model now serving and the previous one's
  // id, or the refusal.
  Result<adminpb::ReloadResponse> Reload(const AdminCaller& who, const std::string& name,
                                         ReloadRefusal* refusal);
  // Reload on a thread of its own (loading takes seconds; a frontend's threads must keep
  // serving), then `done` with its result, on that thread. `self` keeps the controller alive.
  using ReloadDone =
      std::function<void(const Result<adminpb::ReloadResponse>&, const ReloadRefusal&)>;
  static void ReloadInBackground(std::shared_ptr<AdminController> self, AdminCaller who,
                                 std::string name, ReloadDone done);
  // The models reload can switch to (the .gguf files of model_dir), the one serving marked.
  Result<adminpb::ListModelsResponse> Models() const;
  adminpb::ModelStatus Model() const;

  // trace, debug, info, warn, error, off. InvalidArgument naming the value otherwise.
  Status SetLogLevel(const AdminCaller& who, const std::string& level);
  // The memory budget of the served model (its MemoryGovernor): Unavailable, saying how to get
  // one, with memory_pressure off.
  Result<adminpb::MemoryBudget> Memory() const;
  // The operator's budget for the whole process in bytes (nullopt clears it). Audited.
  Status SetMemoryBudget(const AdminCaller& who, std::optional<uint64_t> bytes);
  // A new plan of the current budget, applied between two steps. Audited.
  Status Replan(const AdminCaller& who);

  // An admin call that was refused before it ran (bad body, unknown route): audited only.
  void RecordRefused(const AdminCaller& who, const std::string& action, const std::string& why);

  std::shared_ptr<EventSubscription> Subscribe(std::function<void()> on_ready);
  const ServerContext& context() const { return ctx_; }

  // Ends every event stream (the server is shutting down).
  void CloseWatchers() { hub_.CloseAll(); }
  // Ends the status thread. Idempotent; the destructor calls it.
  void Stop();

 private:
  explicit AdminController(ServerContext& ctx) : ctx_(ctx) {}
  void Run();
  // Audits, counts and publishes one action.
  void Done(const AdminCaller& who, const std::string& action, const nlohmann::json& args,
            const Status& result);

  ServerContext& ctx_;
  std::unique_ptr<AuditLog> audit_;
  // Described at start, at each reload and when another model is seen; guarded by mu_.
  mutable adminpb::ModelStatus model_;
  mutable std::weak_ptr<ServedModel> described_;  // the model model_ describes; guarded by mu_
  std::weak_ptr<ServedModel> sampled_;            // the model samples_ count; guarded by mu_
  std::mutex reload_mu_;                          // held by the one reload in progress
  EventHub hub_;

  // Generated-token counts once a second, newest last, for tokens/s over 10 s and 60 s.
  mutable std::mutex mu_;
  std::deque<std::pair<std::chrono::steady_clock::time_point, int64_t>> samples_;  // guarded
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace sparrow::server
