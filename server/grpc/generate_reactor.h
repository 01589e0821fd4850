#pragma once
// GenerateReactor: streams one generation to a gRPC client. It submits the request to the
// scheduler with a StreamingSink, writes each batch of drained chunks as one GenerateResponse
// (text plus the token ids behind it) and ends with a message carrying finish_reason, usage and
// timings. A client that cancels or disconnects cancels the scheduler request, so its KV blocks
// are freed at the next step; the RPC ends only after the scheduler has let go of the request.
// Thread-safety: gRPC callbacks and the scheduler thread meet in one mutex-guarded state.
#include <grpcpp/grpcpp.h>

#include <memory>
#include <vector>

#include "server/core/engine_facade.h"
#include "server/core/generation_spec.h"
#include "server/core/request_registry.h"
#include "server/core/server_context.h"
#include "server/grpc/grpc_request.h"
#include "sparrow/v1/sparrow.pb.h"

namespace sparrow::server {

class GenerateReactor final : public grpc::ServerWriteReactor<v1::GenerateResponse> {
 public:
  // Submits the request to `engine` (resolved against it), which the reactor keeps until the
  // end; when the scheduler refuses it (queue full, too long) the RPC finishes at once with that
  // status. Owned by gRPC until OnDone. While it runs the request is listed in ctx.requests;
  // `origin` gives its route, client and key.
  static GenerateReactor* Start(ServerContext& ctx, EngineFacade engine,
                                const ResolvedGeneration& generation, ActiveRequest origin = {});
  // An RPC that fails before anything was submitted (validation, auth).
  static grpc::ServerWriteReactor<v1::GenerateResponse>* Fail(ServerContext& ctx,
                                                              const grpc::Status& status);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  struct Shared;
  GenerateReactor(ServerContext& ctx, std::shared_ptr<Shared> shared);

  ServerContext& ctx_;
  std::shared_ptr<Shared> shared_;  // also held by the sink's on_ready callback
};

}  // namespace sparrow::server
