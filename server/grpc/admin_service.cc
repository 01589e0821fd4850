#include "server/grpc/admin_service.h"

#include <google/protobuf/util/json_util.h>

#include <mutex>

#include "server/admin/admin_controller.h"
#include "server/grpc/grpc_auth.h"
#include "server/grpc/grpc_status.h"

namespace sparrow::server {
namespace {

using json = nlohmann::json;

void FillRequest(const RequestSnapshot& r, const Tokenizer* tok, adminpb::RequestInfo* out) {
  out->set_id(r.id);
  out->set_frontend(r.frontend);
  out->set_route(r.route);
  out->set_remote(r.remote);
  out->set_key_id(r.key_id);
  out->set_state(r.state);
  out->set_age_ms(r.age_ms);
  out->set_stream(r.stream);
  out->set_n(r.n);
  out->set_prompt_tokens(r.prompt_tokens);
  out->set_generated_tokens(r.generated_tokens);
  out->set_max_tokens(r.max_tokens);
  out->set_cancelling(r.cancelling);
  if (tok) out->set_prompt(tok->Detokenize(r.prompt, false, true));
}

void FillDrain(const AdminController& admin, adminpb::DrainResponse* out) {
  const ServerStatus s = admin.Snapshot();
  out->set_draining(s.draining);
  out->set_drained(s.drained);
  out->set_running(s.running);
  out->set_waiting(s.waiting);
}

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
    AdminEvent e = std::move(pending_.front());
    pending_.erase(pending_.begin());
    message_.Clear();
    message_.set_seq(e.seq);
    message_.set_dropped(dropped_);
    dropped_ = 0;
    if (e.type == "status") {
      std::string error;
      if (!StatusFromJson(e.json, message_.mutable_status(), &error)) {
        finished_ = true;
        lock.unlock();
        Finish(grpc::Status(grpc::StatusCode::INTERNAL, "status: " + error));
        return;
      }
    } else {
      const json j = json::parse(e.json, nullptr, false);
      adminpb::ActionEvent* a = message_.mutable_action();
      a->set_action(j.value("action", ""));
      a->set_args_json(j.contains("args") ? j["args"].dump() : "{}");
      a->set_result(j.value("result", ""));
      a->set_detail(j.value("detail", ""));
      a->set_remote(j.value("remote", ""));
      a->set_key_id(j.value("key_id", ""));
    }
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

bool StatusFromJson(const std::string& text, adminpb::ServerStatus* out, std::string* error) {
  return ProtoFromJson(text, out, error);
}

bool ProtoFromJson(const std::string& text, google::protobuf::Message* out, std::string* error) {
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = false;
  const auto st = google::protobuf::util::JsonStringToMessage(text, out, opts);
  if (!st.ok()) {
    *error = std::string(st.message());
    return false;
  }
  return true;
}

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
  std::string error;
  const std::string text =
      StatusJson(ctx_.admin->Snapshot()).dump(-1, ' ', false, json::error_handler_t::replace);
  if (!StatusFromJson(text, response, &error)) {
    return Done(context, grpc::Status(grpc::StatusCode::INTERNAL, "status: " + error));
  }
  return Done(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* AdminService::ListRequests(grpc::CallbackServerContext* context,
                                                     const adminpb::ListRequestsRequest* request,
                                                     adminpb::ListRequestsResponse* response) {
  AdminCaller who;
  if (auto* r = Check(context, "ListRequests", &who)) return r;
  const bool with_prompt = request->include_prompt();
  const std::shared_ptr<ServedModel> served = ctx_.served();
  const auto list = with_prompt ? ctx_.admin->RequestsWithPrompts(who) : ctx_.admin->Requests();
  for (const auto& req : list) {
    FillRequest(req, with_prompt ? served->tokenizer.get() : nullptr, response->add_data());
  }
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
  FillDrain(*ctx_.admin, response);
  return Done(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* AdminService::Resume(grpc::CallbackServerContext* context,
                                               const adminpb::ResumeRequest*,
                                               adminpb::DrainResponse* response) {
  AdminCaller who;
  if (auto* r = Check(context, "Resume", &who)) return r;
  (void)ctx_.admin->Resume(who);
  FillDrain(*ctx_.admin, response);
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
      [this, reactor, response](const Result<std::string>& result,
                                const AdminController::ReloadRefusal& refusal) {
        grpc::Status status = grpc::Status::OK;
        std::string error;
        if (!result.ok()) {
          status = ToGrpcStatus(refusal.status);
          if (refusal.code == "reload_disabled" || refusal.code == "model_load_failed") {
            status = grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, refusal.status.message());
          } else if (refusal.code == "reload_in_progress") {
            status = grpc::Status(grpc::StatusCode::ABORTED, refusal.status.message());
          }
        } else if (!ProtoFromJson(ModelStatusJson(ctx_.admin->Model()).dump(),
                                  response->mutable_model(), &error)) {
          status = grpc::Status(grpc::StatusCode::INTERNAL, "model status: " + error);
        } else {
          response->set_previous(*result);
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
  const std::string serving = ctx_.admin->Model().file;
  for (const auto& m : *models) {
    adminpb::ModelFile* f = response->add_data();
    f->set_name(m.name);
    f->set_bytes(m.bytes);
    f->set_serving(m.name == serving);
  }
  return Done(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* AdminService::GetShards(grpc::CallbackServerContext* context,
                                                  const adminpb::GetShardsRequest*,
                                                  adminpb::Shards* response) {
  AdminCaller who;
  if (auto* r = Check(context, "GetShards", &who)) return r;
  std::string error;
  if (!ProtoFromJson(ShardsJson(*ctx_.served()).dump(), response, &error)) {
    return Done(context, grpc::Status(grpc::StatusCode::INTERNAL, "shards: " + error));
  }
  return Done(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* AdminService::MemoryReply(grpc::CallbackServerContext* context,
                                                    const Status& action,
                                                    adminpb::MemoryBudget* response) {
  if (!action.ok()) return Done(context, ToGrpcStatus(action));
  const Result<MemoryGovernorStats> m = ctx_.admin->Memory();
  if (!m.ok()) return Done(context, ToGrpcStatus(m.status()));
  const std::shared_ptr<ServedModel> served = ctx_.served();
  std::string error;
  if (!ProtoFromJson(MemoryJson(*m, served->scheduler->Stats()).dump(), response, &error)) {
    return Done(context, grpc::Status(grpc::StatusCode::INTERNAL, "memory: " + error));
  }
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
