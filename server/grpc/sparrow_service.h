#pragma once
// SparrowService: the sparrow.v1.Sparrow gRPC service on the callback API. Every call checks
// the bearer key (when one is configured) and the request, then reaches the engine only through
// the context's EngineFacade. Thread-safe: gRPC calls it from many threads.
#include <grpcpp/grpcpp.h>

#include "server/core/generation_spec.h"
#include "server/core/server_context.h"
#include "sparrow/v1/sparrow.grpc.pb.h"

namespace sparrow::server {

class SparrowService final : public v1::Sparrow::CallbackService {
 public:
  // `ctx` must outlive the service.
  explicit SparrowService(ServerContext& ctx) : ctx_(ctx) {}

  grpc::ServerWriteReactor<v1::GenerateResponse>* Generate(
      grpc::CallbackServerContext* context, const v1::GenerateRequest* request) override;
  grpc::ServerWriteReactor<v1::GenerateResponse>* Chat(grpc::CallbackServerContext* context,
                                                       const v1::ChatRequest* request) override;
  grpc::ServerUnaryReactor* Tokenize(grpc::CallbackServerContext* context,
                                     const v1::TokenizeRequest* request,
                                     v1::TokenizeResponse* response) override;
  grpc::ServerUnaryReactor* Detokenize(grpc::CallbackServerContext* context,
                                       const v1::DetokenizeRequest* request,
                                       v1::DetokenizeResponse* response) override;
  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* context,
                                       const v1::ListModelsRequest* request,
                                       v1::ListModelsResponse* response) override;
  grpc::ServerUnaryReactor* Embed(grpc::CallbackServerContext* context,
                                  const v1::EmbedRequest* request,
                                  v1::EmbedResponse* response) override;
  grpc::ServerUnaryReactor* Rerank(grpc::CallbackServerContext* context,
                                   const v1::RerankRequest* request,
                                   v1::RerankResponse* response) override;
  grpc::ServerUnaryReactor* ReportMemoryPressure(
      grpc::CallbackServerContext* context, const v1::ReportMemoryPressureRequest* request,
      v1::ReportMemoryPressureResponse* response) override;

 private:
  // The shared preparation (generation_spec.h), then the stream; or the refusal.
  grpc::ServerWriteReactor<v1::GenerateResponse>* Resolve(const GenerationSpec& spec,
                                                          ActiveRequest origin);
  // Finishes a unary call with `status`, counting it in the metrics.
  grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* context, const grpc::Status& status);

  ServerContext& ctx_;
};

}  // namespace sparrow::server
