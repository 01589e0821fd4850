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

RerankSpec SpecOf(const v1::RerankRequest& r) {
  RerankSpec spec;
  spec.model = r.model();
  spec.query = r.query();
  spec.documents.assign(r.documents().begin(), r.documents().end());
  if (r.has_top_n()) spec.top_n = r.top_n();
  return spec;
}

}  // namespace

grpc::ServerUnaryReactor* EmbedReactor::Start(ServerContext& ctx, const v1::EmbedRequest& request,
                                              v1::EmbedResponse* response) {
  auto* reactor = new EmbedReactor(ctx, [response](EmbeddingJob& job) {
    for (std::vector<float>& v : job.TakeVectors()) {
      v1::Embedding* e = response->add_embeddings();
      e->mutable_values()->Assign(v.begin(), v.end());
    }
    response->set_prompt_tokens(job.prompt_tokens());
  });
  auto spec = SpecOf(request);
  if (!spec.ok()) {
    reactor->Finish(ToGrpcStatus(spec.status()));
    return reactor;
  }
  EngineFacade engine = ctx.engine();
  response->set_model(engine.model_id());
  response->set_pooling(PoolingName(spec->pooling.value_or(engine.pooling())));
  reactor->Begin(std::move(engine), [&spec](const EngineFacade& e, std::function<void()> on_ready,
                                            GenerationError* err) {
    return e.Embed(*spec, std::move(on_ready), err);
  });
  return reactor;
}

grpc::ServerUnaryReactor* EmbedReactor::StartRerank(ServerContext& ctx,
                                                    const v1::RerankRequest& request,
                                                    v1::RerankResponse* response) {
  auto spec = std::make_shared<const RerankSpec>(SpecOf(request));
  const bool with_documents = request.return_documents();
  auto* reactor = new EmbedReactor(ctx, [response, spec, with_documents](EmbeddingJob& job) {
    std::vector<float> scores;
    for (const std::vector<float>& v : job.TakeVectors()) scores.push_back(v.empty() ? 0 : v[0]);
    for (size_t i : RankedIndices(scores, spec->top_n)) {
      v1::RerankResult* r = response->add_results();
      r->set_index(static_cast<uint32_t>(i));
      r->set_relevance_score(scores[i]);
      if (with_documents) r->set_document(spec->documents[i]);
    }
    response->set_prompt_tokens(job.prompt_tokens());
  });
  // The model the request names, loaded in place of the one serving when it is another of
  // models_dir (this callback thread waits, at most model_switch_wait_ms).
  Result<EngineFacade> named = ctx.EngineFor(spec->model);
  if (!named.ok()) {
    reactor->Finish(ToGrpcStatus(named.status()));
    return reactor;
  }
  response->set_model(named->model_id());
  reactor->Begin(
      std::move(named).value(),
      [spec](const EngineFacade& e, std::function<void()> on_ready, GenerationError* err) {
        return e.Rerank(*spec, std::move(on_ready), err);
      });
  return reactor;
}

void EmbedReactor::Begin(EngineFacade engine, const Starter& start) {
  engine_ = std::move(engine);
  GenerationError err;
  std::shared_ptr<EmbeddingJob> job = start(
      *engine_,
      [this] {
        {
          std::lock_guard<std::mutex> lock(mu_);
          ready_ = true;
          if (job_ == nullptr) return;  // Begin completes it
        }
        Complete();
      },
      &err);
  if (job == nullptr) {
    Finish(ToGrpcStatus(err.status));  // the message names the field at fault
    return;
  }
  bool ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = std::move(job);
    ready = ready_;
  }
  if (ready) Complete();
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
  fill_(*job);
  Finish(grpc::Status::OK);
}

void EmbedReactor::Finish(const grpc::Status& status) {
  ctx_.metrics.RecordResponse("grpc", GrpcCodeName(status.error_code()));
  grpc::ServerUnaryReactor::Finish(status);
}

}  // namespace sparrow::server
