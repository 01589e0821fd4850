#pragma once
// EmbedReactor: one gRPC Embed call. The request becomes an EmbeddingSpec (errors name the
// field), EngineFacade::Embed runs its inputs, and the call finishes when the job is done, on
// the scheduler thread that ends it (filling the response copies the vectors: at most 2048 of
// n_embd floats). A client that cancels cancels the inputs not yet computed. Deletes itself when
// gRPC is done with it.
#include <grpcpp/grpcpp.h>

#include <memory>
#include <mutex>

#include "server/core/engine_facade.h"
#include "server/core/server_context.h"
#include "sparrow/v1/sparrow.grpc.pb.h"

namespace sparrow::server {

class EmbedReactor final : public grpc::ServerUnaryReactor {
 public:
  // Starts the call (finishing it at once on a bad request or a refusal).
  static grpc::ServerUnaryReactor* Start(ServerContext& ctx, const v1::EmbedRequest& request,
                                         v1::EmbedResponse* response);

  void OnCancel() override;
  void OnDone() override { delete this; }

 private:
  EmbedReactor(ServerContext& ctx, v1::EmbedResponse* response);
  // The job is done: the answer, or its failure. Once, from whichever of the job's on_ready and
  // the job's arrival in job_ comes second.
  void Complete();
  void Finish(const grpc::Status& status);

  ServerContext& ctx_;
  v1::EmbedResponse* response_;
  EngineFacade engine_;  // kept until the job is done: its model holds the scheduler
  std::mutex mu_;
  std::shared_ptr<EmbeddingJob> job_;  // guarded by mu_
  bool ready_ = false;                 // on_ready came; guarded by mu_
};

}  // namespace sparrow::server
