#include "server/core/engine_facade.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "engine/model/architecture.h"
#include "engine/tokenizer/incremental_detokenizer.h"
#include "server/core/served_model.h"
#include "server/core/server_context.h"

namespace sparrow::server {

EngineFacade::EngineFacade(std::shared_ptr<ServedModel> model, const ServerContext* ctx, Status why)
    : model_(std::move(model)), ctx_(ctx), why_(std::move(why)) {
  if (!model_ && why_.ok()) why_ = Unavailable("no model is loaded");
}

const std::string& EngineFacade::model_id() const {
  static const std::string kNone;
  return model_ ? model_->model_id : kNone;
}

int64_t EngineFacade::n_ctx() const {
  return model_ ? model_->n_ctx : 0;
}

ModelInfo EngineFacade::Info() const {
  ModelInfo info;
  if (!model_) return info;
  info.id = model_->model_id;
  info.file_name = model_->path.substr(model_->path.find_last_of('/') + 1);
  const ModelConfig& mc = model_->model->config();
  if (mc.arch != nullptr) info.architecture = std::string(mc.arch->name);
  info.n_ctx = model_->n_ctx;
  info.n_vocab = model_->tokenizer->n_vocab();
  std::map<TensorType, uint64_t> by_type;  // the matrices' elements
  for (const GgufTensorInfo& t : model_->model->file().tensors()) {
    info.n_params += static_cast<int64_t>(t.n_elements);
    if (t.dims.size() >= 2) by_type[t.type] += t.n_elements;
  }
  const auto most =
      std::max_element(by_type.begin(), by_type.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; });
  if (most != by_type.end()) {
    info.quantization = std::string(TensorTypeName(most->first));
    for (char& c : info.quantization)
      c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  info.digest = model_->digest;
  info.file_bytes = static_cast<int64_t>(model_->model->file().file_size());
  return info;
}

std::vector<int32_t> EngineFacade::Tokenize(std::string_view text, bool add_special,
                                            bool parse_special) const {
  if (!model_) return {};
  return model_->tokenizer->Tokenize(text, add_special, parse_special);
}

std::string EngineFacade::Detokenize(std::span<const int32_t> ids, bool remove_special,
                                     bool render_special) const {
  if (!model_) return {};
  return model_->tokenizer->Detokenize(ids, remove_special, render_special);
}

std::string_view EngineFacade::TokenPiece(int32_t id, bool special) const {
  if (!model_) return {};
  return model_->tokenizer->piece(id, special);
}

int32_t EngineFacade::n_vocab() const {
  if (!model_) return 0;
  return model_->tokenizer->n_vocab();
}

bool EngineFacade::Resolve(const GenerationSpec& spec, ResolvedGeneration* out,
                           GenerationError* error) const {
  if (!model_) {
    error->status = why_;
    error->param = spec.fields.model;
    error->code = ModelErrorCode(why_);
    return false;
  }
  return ResolveGeneration(*model_, spec, out, error);
}

std::shared_ptr<StreamingSink> EngineFacade::MakeSink(StreamingSinkOptions options,
                                                      Metrics* metrics,
                                                      std::function<void()> on_ready) const {
  return std::make_shared<StreamingSink>(*model_->tokenizer, std::move(options), metrics,
                                         std::move(on_ready));
}

Status EngineFacade::Submit(const ResolvedGeneration& g,
                            const std::vector<std::shared_ptr<StreamingSink>>& sinks) const {
  if (!model_) return why_;
  return SubmitGeneration(*ctx_, *model_, g, {sinks.begin(), sinks.end()});
}

std::shared_ptr<EmbeddingJob> EngineFacade::Embed(const EmbeddingSpec& spec,
                                                  std::function<void()> on_ready,
                                                  GenerationError* error) const {
  return StartJob([&](ResolvedEmbedding* r) { return ResolveEmbedding(*model_, spec, r, error); },
                  std::move(on_ready), error);
}

std::shared_ptr<EmbeddingJob> EngineFacade::Rerank(const RerankSpec& spec,
                                                   std::function<void()> on_ready,
                                                   GenerationError* error) const {
  return StartJob([&](ResolvedEmbedding* r) { return ResolveRerank(*model_, spec, r, error); },
                  std::move(on_ready), error);
}

std::shared_ptr<EmbeddingJob> EngineFacade::StartJob(
    const std::function<bool(ResolvedEmbedding*)>& resolve, std::function<void()> on_ready,
    GenerationError* error) const {
  if (!model_) {
    error->status = why_;
    return nullptr;
  }
  ResolvedEmbedding resolved;
  if (!resolve(&resolved)) return nullptr;
  if (ctx_->draining.load()) {
    error->status =
        Unavailable("the server is draining (an operator stopped admissions); retry later");
    return nullptr;
  }
  // One batch's worth of inputs at a time: enough to fill the scheduler's running set, and
  // never more than half its queue, which other clients share.
  const SchedulerOptions& o = model_->scheduler->options();
  const int64_t window = std::max<int64_t>(1, std::min(o.max_running, o.max_queue / 2));
  auto job = std::make_shared<EmbeddingJob>(model_->scheduler.get(), std::move(resolved), window,
                                            std::move(on_ready));
  if (Status st = job->Start(); !st.ok()) {
    error->status = st;
    return nullptr;
  }
  return job;
}

PoolingType EngineFacade::pooling() const {
  return model_->pooling;
}

EngineStats EngineFacade::Stats() const {
  EngineStats s;
  if (!model_) return s;
  s.scheduler = model_->scheduler->Stats();
  if (model_->memory) s.memory = model_->memory->stats();
  return s;
}

Result<uint64_t> EngineFacade::ReportPressure(PressureLevel level,
                                              const std::string& source) const {
  if (!model_) return why_;
  if (!model_->memory) {
    // The admin API's answer for the same state (AdminController::Memory).
    return Unsupported(
        "memory budget control is off (memory_pressure 0): start sparrowd with memory_pressure 1 "
        "or 2");
  }
  model_->memory->Report(level, source);
  return model_->memory->stats().budget_bytes;
}

std::string SanitizedUtf8(std::string_view bytes) {
  std::string text;
  AppendSanitizedUtf8(bytes, /*at_end=*/true, &text);
  return text;
}

}  // namespace sparrow::server
