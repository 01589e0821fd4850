#include "server/grpc/admin_service.h"

#include <mutex>

#include "server/admin/admin_controller.h"
#include "server/grpc/grpc_auth.h"
#include "server/grpc/grpc_status.h"

namespace sparrow::server {
namespace {

// Streams the controller's events to one watcher. Writes one event at a time; events that
// arrive meanwhile wait in the subscription's bounded queue.
class WatchReactor final : public grpc::ServerWriteReactor<adminpb::Event> {
 public:
  explicit WatchReactor(AdminController& admin) : guard_(std::make_shared<Guard>()) {
    guard_->reactor = this;
    // The status thread may call back at any time, even after OnDone: through the guard.
    auto sub = admin.Subscribe([weak = std::weak_ptr<Guard>(guard_)] {
      if (auto g = weak.lock()) {
        std::lock_guard<std::mutex> lock(g->mu);
        if (g->reactor) g->reactor->Pump();
      }
    });
    {
      std::lock_guard<std::mutex> lock(mu_);
      sub_ = std::move(sub);
    }
    Pump();
  }

  void OnWriteDone(bool ok) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      writing_ = false;
      if (!ok) gone_ = true;
    }
    Pump();
  }
  void OnCancel() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      gone_ = true;
    }
    Pump();
  }
  void OnDone() override {
    {
      std::lock_guard<std::mutex> lock(guard_->mu);
      guard_->reactor = nullptr;
    }
    delete this;
  }

 private:
  void Pump() {
    std::unique_lock<std::mutex> lock(mu_);
    if (!sub_ || writing_ || finished_) return;
    if (gone_ || sub_->closed()) {
      finished_ = true;
      lock.unlock();
      Finish(gone_ ? grpc::Status::CANCELLED : grpc::Status::OK);
      return;
    }
    std::vector<AdminEvent> events;
    const int64_t dropped = sub_->Drain(&events);
    for (auto& e : events) pending_.push_back(std::move(e));
    dropped_ += dropped;
    if (pending_.empty()) return;
    message_ = *pending_.front();
    pending_.erase(pending_.begin());
    message_.set_dropped(dropped_);
    dropped_ = 0;
    writing_ = true;
    lock.unlock();
    StartWrite(&message_);
  }

  struct Guard {
    std::mutex mu;
    WatchReactor* reactor = nullptr;  // null once gRPC is done with the call
  };
  std::shared_ptr<Guard> guard_;
  std::mutex mu_;
  std::shared_ptr<EventSubscription> sub_;                  // guarded by mu_
  std::vector<AdminEvent> pending_;                         // guarded by mu_
  int64_t dropped_ = 0;                                     // guarded by mu_
  bool writing_ = false, gone_ = false, finished_ = false;  // guarded by mu_
  adminpb::Event message_;
};

class FailedWatch final : public grpc::ServerWriteReactor<adminpb::Event> {
 public:
  explicit FailedWatch(const grpc::Status& s) { Finish(s); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::ServerUnaryReactor* AdminService::Done(grpc::CallbackServerContext* context,
                                             const grpc::Status& status) {
  ctx_.metrics.RecordResponse("grpc", GrpcCodeName(status.error_code()));
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

grpc::ServerUnaryReactor* AdminService::Check(grpc::CallbackServerContext* context,
                                              const char* what, AdminCaller* who) {
  std::string key_id;
  const grpc::Status auth =
      Authorize(ctx_, *context, AuthScope::kAdmin, std::string("Admin/") + what, &key_id);
  if (!auth.ok()) return Done(context, auth);
  if (!ctx_.admin) {
    return Done(context, grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                      "this server does not run the admin API"));
  }
  *who = AdminCaller{"grpc", context->peer(), key_id};
  return nullptr;
}

grpc::ServerUnaryReactor* AdminService::GetStatus(grpc::CallbackServerContext* context,
                                                  const adminpb::GetStatusRequest*,
                                                  adminpb::ServerStatus* response) {
  AdminCaller who;
  if (auto* r = Check(context, "GetStatus", &who)) return r;
  *response = ctx_.admin->Snapshot();
  return Done(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* AdminService::ListRequests(grpc::CallbackServerContext* context,
                                                     const adminpb::ListRequestsRequest* request,
                                                     adminpb::ListRequestsResponse* response) {
  AdminCaller who;
  if (auto* r = Check(context, "ListRequests", &who)) return r;
  *response =
      request->include_prompt() ? ctx_.admin->RequestsWithPrompts(who) : ctx_.admin->Requests();
  return Done(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* AdminService::CancelRequest(grpc::CallbackServerContext* context,
                                                      const adminpb::CancelRequestRequest* request,
                                                      adminpb::CancelRequestResponse* response) {
  AdminCaller who;
  if (auto* r = Check(context, "CancelRequest", &who)) return r;
  const Status s = ctx_.admin->Cancel(who, request->id());
  if (!s.ok()) return Done(context, ToGrpcStatus(s));
  response->set_id(request->id());
  response->set_cancelled(true);
  return Done(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* AdminService::Drain(grpc::CallbackServerContext* context,
                                              const adminpb::DrainRequest*,
                                              adminpb::DrainResponse* response) {
  AdminCaller who;
  if (auto* r = Check(context, "Drain", &who)) return r;
  (void)ctx_.admin->Drain(who);
  *response = ctx_.admin->DrainState();
  return Done(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* AdminService::Resume(grpc::CallbackServerContext* context,
                                               const adminpb::ResumeRequest*,
                                               adminpb::DrainResponse* response) {
  AdminCaller who;
  if (auto* r = Check(context, "Resume", &who)) return r;
  (void)ctx_.admin->Resume(who);
  *response = ctx_.admin->DrainState();
  return Done(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* AdminService::SetLogLevel(grpc::CallbackServerContext* context,
                                                    const adminpb::SetLogLevelRequest* request,
                                                    adminpb::SetLogLevelResponse* response) {
  AdminCaller who;
  if (auto* r = Check(context, "SetLogLevel", &who)) return r;
  const Status s = ctx_.admin->SetLogLevel(who, request->level());
  if (!s.ok()) return Done(context, ToGrpcStatus(s));
  response->set_level(request->level());
  return Done(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* AdminService::Reload(grpc::CallbackServerContext* context,
                                               const adminpb::ReloadRequest* request,
                                               adminpb::ReloadResponse* response) {
  AdminCaller who;
  if (auto* r = Check(context, "Reload", &who)) return r;
  // Finished from the reload's own thread, so gRPC's callback threads keep serving.
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  AdminController::ReloadInBackground(
      ctx_.admin, who, request->model(),
      [this, reactor, response](const Result<adminpb::ReloadResponse>& result,
                                const AdminController::ReloadRefusal& refusal) {
        grpc::Status status = grpc::Status::OK;
        if (!result.ok()) {
          status = ToGrpcStatus(refusal.status);
          if (refusal.code == "reload_disabled" || refusal.code == "model_load_failed") {
            status = grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, refusal.status.message());
          } else if (refusal.code == "reload_in_progress") {
            status = grpc::Status(grpc::StatusCode::ABORTED, refusal.status.message());
          }
        } else {
          *response = *result;
        }
        ctx_.metrics.RecordResponse("grpc", GrpcCodeName(status.error_code()));
        reactor->Finish(status);
      });
  return reactor;
}

grpc::ServerUnaryReactor* AdminService::ListModels(grpc::CallbackServerContext* context,
                                                   const adminpb::ListModelsRequest*,
                                                   adminpb::ListModelsResponse* response) {
  AdminCaller who;
  if (auto* r = Check(context, "ListModels", &who)) return r;
  auto models = ctx_.admin->Models();
  if (!models.ok()) {
    return Done(context,
                grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, models.status().message()));
  }
  *response = std::move(models).value();
  return Done(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* AdminService::GetShards(grpc::CallbackServerContext* context,
                                                  const adminpb::GetShardsRequest*,
                                                  adminpb::Shards* response) {
  AdminCaller who;
  if (auto* r = Check(context, "GetShards", &who)) return r;
  *response = DescribeShards(ctx_);
  return Done(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* AdminService::MemoryReply(grpc::CallbackServerContext* context,
                                                    const Status& action,
                                                    adminpb::MemoryBudget* response) {
  if (!action.ok()) return Done(context, ToGrpcStatus(action));
  Result<adminpb::MemoryBudget> m = ctx_.admin->Memory();
  if (!m.ok()) return Done(context, ToGrpcStatus(m.status()));
  *response = std::move(m).value();
  return Done(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* AdminService::GetMemory(grpc::CallbackServerContext* context,
                                                  const adminpb::GetMemoryRequest*,
                                                  adminpb::MemoryBudget* response) {
  AdminCaller who;
  if (auto* r = Check(context, "GetMemory", &who)) return r;
  return MemoryReply(context, Status::Ok(), response);
}

grpc::ServerUnaryReactor* AdminService::SetMemoryBudget(
    grpc::CallbackServerContext* context, const adminpb::SetMemoryBudgetRequest* request,
    adminpb::MemoryBudget* response) {
  AdminCaller who;
  if (auto* r = Check(context, "SetMemoryBudget", &who)) return r;
  return MemoryReply(context, ctx_.admin->SetMemoryBudget(who, request->bytes()), response);
}

grpc::ServerUnaryReactor* AdminService::ClearMemoryBudget(grpc::CallbackServerContext* context,
                                                          const adminpb::ClearMemoryBudgetRequest*,
                                                          adminpb::MemoryBudget* response) {
  AdminCaller who;
  if (auto* r = Check(context, "ClearMemoryBudget", &who)) return r;
  return MemoryReply(context, ctx_.admin->SetMemoryBudget(who, std::nullopt), response);
}

grpc::ServerUnaryReactor* AdminService::Replan(grpc::CallbackServerContext* context,
                                               const adminpb::ReplanRequest*,
                                               adminpb::MemoryBudget* response) {
  AdminCaller who;
  if (auto* r = Check(context, "Replan", &who)) return r;
  return MemoryReply(context, ctx_.admin->Replan(who), response);
}

grpc::ServerWriteReactor<adminpb::Event>* AdminService::WatchEvents(
    grpc::CallbackServerContext* context, const adminpb::WatchEventsRequest*) {
  std::string key_id;
  grpc::Status auth = Authorize(ctx_, *context, AuthScope::kAdmin, "Admin/WatchEvents", &key_id);
  if (auth.ok() && !ctx_.admin) {
    auth = grpc::Status(grpc::StatusCode::UNAVAILABLE, "this server does not run the admin API");
  }
  ctx_.metrics.RecordResponse("grpc", GrpcCodeName(auth.error_code()));
  if (!auth.ok()) return new FailedWatch(auth);
  return new WatchReactor(*ctx_.admin);
}

}  // namespace sparrow::server
