#pragma once
// AdminService: sparrow.admin.v1.Admin on gRPC's callback API, the twin of the HTTP routes
// under /admin/v1/. Every call needs the admin key; the work is the AdminController's
// (ctx.admin), whose answers are these messages already: the HTTP routes send the same ones as
// JSON, so the two frontends cannot drift apart. Thread-safe: gRPC calls it from many threads.
#include <grpcpp/grpcpp.h>

#include "server/core/server_context.h"
#include "sparrow/admin/v1/admin.grpc.pb.h"

namespace sparrow::server {

namespace adminpb = ::sparrow::admin::v1;

class AdminService final : public adminpb::Admin::CallbackService {
 public:
  explicit AdminService(ServerContext& ctx) : ctx_(ctx) {}

  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context,
                                      const adminpb::GetStatusRequest* request,
                                      adminpb::ServerStatus* response) override;
  grpc::ServerUnaryReactor* ListRequests(grpc::CallbackServerContext* context,
                                         const adminpb::ListRequestsRequest* request,
                                         adminpb::ListRequestsResponse* response) override;
  grpc::ServerUnaryReactor* CancelRequest(grpc::CallbackServerContext* context,
                                          const adminpb::CancelRequestRequest* request,
                                          adminpb::CancelRequestResponse* response) override;
  grpc::ServerUnaryReactor* Drain(grpc::CallbackServerContext* context,
                                  const adminpb::DrainRequest* request,
                                  adminpb::DrainResponse* response) override;
  grpc::ServerUnaryReactor* Resume(grpc::CallbackServerContext* context,
                                   const adminpb::ResumeRequest* request,
                                   adminpb::DrainResponse* response) override;
  grpc::ServerUnaryReactor* SetLogLevel(grpc::CallbackServerContext* context,
                                        const adminpb::SetLogLevelRequest* request,
                                        adminpb::SetLogLevelResponse* response) override;
  grpc::ServerUnaryReactor* Reload(grpc::CallbackServerContext* context,
                                   const adminpb::ReloadRequest* request,
                                   adminpb::ReloadResponse* response) override;
  grpc::ServerUnaryReactor* GetShards(grpc::CallbackServerContext* context,
                                      const adminpb::GetShardsRequest* request,
                                      adminpb::Shards* response) override;
  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* context,
                                       const adminpb::ListModelsRequest* request,
                                       adminpb::ListModelsResponse* response) override;
  grpc::ServerWriteReactor<adminpb::Event>* WatchEvents(
      grpc::CallbackServerContext* context, const adminpb::WatchEventsRequest* request) override;
  grpc::ServerUnaryReactor* GetMemory(grpc::CallbackServerContext* context,
                                      const adminpb::GetMemoryRequest* request,
                                      adminpb::MemoryBudget* response) override;
  grpc::ServerUnaryReactor* SetMemoryBudget(grpc::CallbackServerContext* context,
                                            const adminpb::SetMemoryBudgetRequest* request,
                                            adminpb::MemoryBudget* response) override;
  grpc::ServerUnaryReactor* ClearMemoryBudget(grpc::CallbackServerContext* context,
                                              const adminpb::ClearMemoryBudgetRequest* request,
                                              adminpb::MemoryBudget* response) override;
  grpc::ServerUnaryReactor* Replan(grpc::CallbackServerContext* context,
                                   const adminpb::ReplanRequest* request,
                                   adminpb::MemoryBudget* response) override;

 private:
  // Finishes a memory call: the budget as it stands after `action` (its status).
  grpc::ServerUnaryReactor* MemoryReply(grpc::CallbackServerContext* context, const Status& action,
                                        adminpb::MemoryBudget* response);
  // Authorizes the call for the admin scope; on failure (or without a controller) finishes it
  // and returns the reactor, else returns null and fills *who.
  grpc::ServerUnaryReactor* Check(grpc::CallbackServerContext* context, const char* what,
                                  struct AdminCaller* who);
  grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* context, const grpc::Status& status);

  ServerContext& ctx_;
};

}  // namespace sparrow::server
