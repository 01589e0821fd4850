#pragma once
// EmbedReactor: one gRPC Embed or Rerank call, each answered by an EmbeddingJob. The request
// becomes an EmbeddingSpec or a RerankSpec (errors name the field), EngineFacade::Embed or
// Rerank runs its inputs, and the call finishes when the job is done, on the scheduler thread
// that ends it (filling the response copies the vectors: at most 2048 of n_embd floats, or a
// score per document). A client that cancels cancels the inputs not yet computed. Deletes
// itself when gRPC is done with it.
#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "server/core/engine_facade.h"
#include "server/core/server_context.h"
#include "sparrow/v1/sparrow.grpc.pb.h"

namespace sparrow::server {

class EmbedReactor final : public grpc::ServerUnaryReactor {
 public:
  // Start the call (finishing it at once on a bad request or a refusal).
  static grpc::ServerUnaryReactor* Start(ServerContext& ctx, const v1::EmbedRequest& request,
                                         v1::EmbedResponse* response);
  static grpc::ServerUnaryReactor* StartRerank(ServerContext& ctx, const v1::RerankRequest& request,
                                               v1::RerankResponse* response);

  void OnCancel() override;
  void OnDone() override { delete this; }

 private:
  // Fills the response from a job that ended well.
  using Fill = std::function<void(EmbeddingJob&)>;
  // Makes the job on `engine` with `on_ready`: Embed or Rerank.
  using Starter = std::function<std::shared_ptr<EmbeddingJob>(
      const EngineFacade& engine, std::function<void()> on_ready, GenerationError* error)>;

  EmbedReactor(ServerContext& ctx, Fill fill) : ctx_(ctx), fill_(std::move(fill)) {}
  // Starts the job on `engine` (or finishes the call with the refusal); the reactor must not be
  // touched afterwards.
  void Begin(EngineFacade engine, const Starter& start);
  // The job is done: the answer, or its failure. Once, from whichever of the job's on_ready and
  // the job's arrival in job_ comes second.
  void Complete();
  void Finish(const grpc::Status& status);

  ServerContext& ctx_;
  Fill fill_;
  std::optional<EngineFacade> engine_;  // kept until the job is done: its model holds the scheduler
  std::mutex mu_;
  std::shared_ptr<EmbeddingJob> job_;  // guarded by mu_
  bool ready_ = false;                 // on_ready came; guarded by mu_
};

}  // namespace sparrow::server
