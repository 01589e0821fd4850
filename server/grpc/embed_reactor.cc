#include "server/grpc/embed_reactor.h"

#include "server/grpc/grpc_status.h"

namespace sparrow::server {
namespace {

// The request in engine terms; the field names are the proto's.
Result<EmbeddingSpec> SpecOf(const v1::EmbedRequest& r) {
  EmbeddingSpec spec;
  spec.model = r.model();
  spec.fields.input = r.texts_size() > 0 ? "texts" : "token_lists";
  spec.texts.assign(r.texts().begin(), r.texts().end());
  for (const v1::TokenIds& t : r.token_lists()) {
    spec.token_lists.emplace_back(t.tokens().begin(), t.tokens().end());
  }
  if (r.texts_size() > 0 && r.token_lists_size() > 0) {
    return InvalidArgument("texts and token_lists: set one of them, not both");
  }
  if (!r.pooling().empty()) {
    spec.pooling = PoolingFromName(r.pooling());
    if (!spec.pooling) {
      return InvalidArgument("pooling: must be mean, cls or last, got '" + r.pooling() + "'");
    }
  }
  if (r.has_dimensions()) spec.dimensions = r.dimensions();
  return spec;
}

}  // namespace

EmbedReactor::EmbedReactor(ServerContext& ctx, v1::EmbedResponse* response)
    : ctx_(ctx), response_(response), engine_(ctx.engine()) {}

grpc::ServerUnaryReactor* EmbedReactor::Start(ServerContext& ctx, const v1::EmbedRequest& request,
                                              v1::EmbedResponse* response) {
  auto* reactor = new EmbedReactor(ctx, response);
  auto spec = SpecOf(request);
  if (!spec.ok()) {
    reactor->Finish(ToGrpcStatus(spec.status()));
    return reactor;
  }
  GenerationError err;
  std::shared_ptr<EmbeddingJob> job = reactor->engine_.Embed(
      *spec,
      [reactor] {
        {
          std::lock_guard<std::mutex> lock(reactor->mu_);
          reactor->ready_ = true;
          if (reactor->job_ == nullptr) return;  // Start completes it
        }
        reactor->Complete();
      },
      &err);
  if (job == nullptr) {
    reactor->Finish(ToGrpcStatus(err.status));  // the message names the field at fault
    return reactor;
  }
  response->set_model(reactor->engine_.model_id());
  response->set_pooling(PoolingName(spec->pooling.value_or(reactor->engine_.pooling())));
  bool ready;
  {
    std::lock_guard<std::mutex> lock(reactor->mu_);
    reactor->job_ = std::move(job);
    ready = reactor->ready_;
  }
  if (ready) reactor->Complete();
  return reactor;
}

void EmbedReactor::OnCancel() {
  std::lock_guard<std::mutex> lock(mu_);
  if (job_) job_->Cancel();
}

void EmbedReactor::Complete() {
  std::shared_ptr<EmbeddingJob> job;
  {
    std::lock_guard<std::mutex> lock(mu_);
    job = job_;
  }
  if (Status st = job->status(); !st.ok()) {
    Finish(ToGrpcStatus(st));
    return;
  }
  for (std::vector<float>& v : job->TakeVectors()) {
    v1::Embedding* e = response_->add_embeddings();
    e->mutable_values()->Assign(v.begin(), v.end());
  }
  response_->set_prompt_tokens(job->prompt_tokens());
  Finish(grpc::Status::OK);
}

void EmbedReactor::Finish(const grpc::Status& status) {
  ctx_.metrics.RecordResponse("grpc", GrpcCodeName(status.error_code()));
  grpc::ServerUnaryReactor::Finish(status);
}

}  // namespace sparrow::server
