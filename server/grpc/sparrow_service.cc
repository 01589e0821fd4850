#include "server/grpc/sparrow_service.h"

#include <string>
#include <vector>

#include "server/chat/chat_template.h"
#include "server/core/engine_facade.h"
#include "server/grpc/embed_reactor.h"
#include "server/grpc/generate_reactor.h"
#include "server/grpc/grpc_auth.h"
#include "server/grpc/grpc_request.h"
#include "server/grpc/grpc_status.h"

namespace sparrow::server {
namespace {

ActiveRequest Origin(const grpc::CallbackServerContext& call, const char* route,
                     const std::string& key_id) {
  ActiveRequest r;
  r.frontend = "grpc";
  r.route = route;
  r.remote = call.peer();
  r.key_id = key_id;
  r.stream = true;
  return r;
}

}  // namespace

grpc::ServerUnaryReactor* SparrowService::Done(grpc::CallbackServerContext* context,
                                               const grpc::Status& status) {
  ctx_.metrics.RecordResponse("grpc", GrpcCodeName(status.error_code()));
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

grpc::ServerWriteReactor<v1::GenerateResponse>* SparrowService::Generate(
    grpc::CallbackServerContext* context, const v1::GenerateRequest* request) {
  std::string key_id;
  grpc::Status auth = Authorize(ctx_, *context, AuthScope::kApiKey, "Generate", &key_id);
  if (!auth.ok()) return GenerateReactor::Fail(ctx_, auth);
  auto spec = GenerateSpec(*request);
  if (!spec.ok()) return GenerateReactor::Fail(ctx_, ToGrpcStatus(spec.status()));
  return Resolve(*spec, Origin(*context, "Generate", key_id));
}

grpc::ServerWriteReactor<v1::GenerateResponse>* SparrowService::Chat(
    grpc::CallbackServerContext* context, const v1::ChatRequest* request) {
  std::string key_id;
  grpc::Status auth = Authorize(ctx_, *context, AuthScope::kApiKey, "Chat", &key_id);
  if (!auth.ok()) return GenerateReactor::Fail(ctx_, auth);
  auto spec = ChatSpec(*request);
  if (!spec.ok()) return GenerateReactor::Fail(ctx_, ToGrpcStatus(spec.status()));
  return Resolve(*spec, Origin(*context, "Chat", key_id));
}

grpc::ServerWriteReactor<v1::GenerateResponse>* SparrowService::Resolve(const GenerationSpec& spec,
                                                                        ActiveRequest origin) {
  ResolvedGeneration g;
  GenerationError error;
  // The model the request names, loaded in place of the one serving when it is another of
  // models_dir (this callback thread waits, at most model_switch_wait_ms).
  Result<EngineFacade> named = ctx_.EngineFor(spec.model);
  if (!named.ok()) return GenerateReactor::Fail(ctx_, ToGrpcStatus(named.status()));
  EngineFacade engine = std::move(named).value();
  if (!engine.Resolve(spec, &g, &error)) {
    return GenerateReactor::Fail(ctx_, ToGrpcStatus(error.status));
  }
  return GenerateReactor::Start(ctx_, std::move(engine), g, std::move(origin));
}

grpc::ServerUnaryReactor* SparrowService::Tokenize(grpc::CallbackServerContext* context,
                                                   const v1::TokenizeRequest* request,
                                                   v1::TokenizeResponse* response) {
  grpc::Status auth = Authorize(ctx_, *context, AuthScope::kApiKey, "Tokenize", nullptr);
  if (!auth.ok()) return Done(context, auth);
  const Result<EngineFacade> named = ctx_.EngineFor(request->model());
  if (!named.ok()) return Done(context, ToGrpcStatus(named.status()));
  const EngineFacade& engine = *named;
  const bool add_special = request->has_add_special() ? request->add_special() : true;
  for (int32_t id : engine.Tokenize(request->text(), add_special, request->parse_special())) {
    response->add_tokens(id);
    response->add_pieces(std::string(engine.TokenPiece(id, /*special=*/true)));
  }
  return Done(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* SparrowService::Detokenize(grpc::CallbackServerContext* context,
                                                     const v1::DetokenizeRequest* request,
                                                     v1::DetokenizeResponse* response) {
  grpc::Status auth = Authorize(ctx_, *context, AuthScope::kApiKey, "Detokenize", nullptr);
  if (!auth.ok()) return Done(context, auth);
  const Result<EngineFacade> named = ctx_.EngineFor(request->model());
  if (!named.ok()) return Done(context, ToGrpcStatus(named.status()));
  const EngineFacade& engine = *named;
  Status st = CheckTokenIds(request->tokens(), engine.n_vocab(), "tokens");
  if (!st.ok()) return Done(context, ToGrpcStatus(st));
  const std::vector<int32_t> ids(request->tokens().begin(), request->tokens().end());
  std::string raw = engine.Detokenize(ids, request->remove_special(), request->render_special());
  response->set_text(SanitizedUtf8(raw));
  response->set_raw(std::move(raw));
  return Done(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* SparrowService::ListModels(grpc::CallbackServerContext* context,
                                                     const v1::ListModelsRequest* /*request*/,
                                                     v1::ListModelsResponse* response) {
  grpc::Status auth = Authorize(ctx_, *context, AuthScope::kApiKey, "ListModels", nullptr);
  if (!auth.ok()) return Done(context, auth);
  // Every model of models_dir; the loaded one described in full (a sleeping one is not woken).
  const std::optional<EngineFacade> loaded = ctx_.LoadedEngine();
  for (const ModelEntry& m : ctx_.ListModels()) {
    v1::ModelInfo* info = response->add_models();
    info->set_id(m.id);
    info->set_path(m.file_name);
    info->set_loaded(m.state == ModelState::kLoaded);
    info->set_status(ModelStateName(m.state));
    if (!loaded || loaded->model_id() != m.id) continue;
    const ModelInfo model = loaded->Info();
    if (!model.architecture.empty()) info->set_architecture(model.architecture);
    info->set_n_vocab(model.n_vocab);
    info->set_n_ctx(model.n_ctx);
    info->set_n_params(model.n_params);
  }
  return Done(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* SparrowService::Embed(grpc::CallbackServerContext* context,
                                                const v1::EmbedRequest* request,
                                                v1::EmbedResponse* response) {
  grpc::Status auth = Authorize(ctx_, *context, AuthScope::kApiKey, "Embed", nullptr);
  if (!auth.ok()) return Done(context, auth);
  return EmbedReactor::Start(ctx_, *request, response);
}

grpc::ServerUnaryReactor* SparrowService::Rerank(grpc::CallbackServerContext* context,
                                                 const v1::RerankRequest* request,
                                                 v1::RerankResponse* response) {
  grpc::Status auth = Authorize(ctx_, *context, AuthScope::kApiKey, "Rerank", nullptr);
  if (!auth.ok()) return Done(context, auth);
  return EmbedReactor::StartRerank(ctx_, *request, response);
}

grpc::ServerUnaryReactor* SparrowService::ReportMemoryPressure(
    grpc::CallbackServerContext* context, const v1::ReportMemoryPressureRequest* request,
    v1::ReportMemoryPressureResponse* response) {
  // A report of RUNNING_CRITICAL sets the budget to its floor and the server turns requests
  // away: the host app's key (or an admin key) only, never an inference key.
  grpc::Status auth = Authorize(ctx_, *context, AuthScope::kHost, "ReportMemoryPressure", nullptr);
  if (!auth.ok()) return Done(context, auth);
  std::optional<PressureLevel> level;
  if (!request->trim_level().empty()) {
    level = PressureFromTrimMemory(request->trim_level());
  } else if (request->trim_level_value() != 0) {
    level = PressureFromTrimMemory(request->trim_level_value());
  }
  if (!level) {
    return Done(context,
                grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                             "trim_level: '" + request->trim_level() + "' / " +
                                 std::to_string(request->trim_level_value()) +
                                 " is not an onTrimMemory level (RUNNING_MODERATE, RUNNING_LOW, "
                                 "RUNNING_CRITICAL, UI_HIDDEN, BACKGROUND, MODERATE, COMPLETE)"));
  }
  // A sleeping model holds no memory to give back: the report goes to the loaded one only.
  const std::optional<EngineFacade> loaded = ctx_.LoadedEngine();
  const Result<uint64_t> budget =
      loaded ? loaded->ReportPressure(*level, "host app")
             : Result<uint64_t>(Unavailable("the model is asleep (sleep_idle_seconds): it holds "
                                            "no memory to give back"));
  if (!budget.ok()) return Done(context, ToGrpcStatus(budget.status()));  // control is off
  response->set_pressure_level(std::string(PressureLevelName(*level)));
  response->set_budget_bytes(*budget);
  return Done(context, grpc::Status::OK);
}

}  // namespace sparrow::server
