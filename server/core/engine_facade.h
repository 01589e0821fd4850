#pragma once
// EngineFacade: everything a frontend (HTTP, gRPC) may ask of the engine, pinned to the model
// that served when it was taken: the model's description, tokenizing, preparing and submitting
// a generation, the engine's counters and the pressure the host app reports. A frontend takes
// one from ServerContext::engine() per request and keeps it until the request's last token, so
// a reload, which swaps what engine() returns, never pulls a model, a tokenizer or a scheduler
// out from under a request. What serves behind it (ServedModel, its scheduler and memory
// governor) is server/core's own.
// Cheap to copy; thread-safe (every member is const over thread-safe parts).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/result.h"
#include "engine/control/memory_governor.h"
#include "engine/memory/pressure_level.h"
#include "engine/sched/scheduler.h"
#include "server/core/embedding_job.h"
#include "server/core/embedding_spec.h"
#include "server/core/generation_spec.h"
#include "server/core/metrics.h"
#include "server/core/rerank_spec.h"
#include "server/core/streaming_sink.h"

namespace sparrow::server {

struct ServedModel;
struct ServerContext;

// What clients may learn of the model being served.
struct ModelInfo {
  std::string id;            // what clients name in "model"
  std::string file_name;     // the GGUF file, without its folder
  std::string architecture;  // the GGUF's family ("llama"); "" when the file names none known
  int64_t n_ctx = 0;         // positions one request may use (prompt + output)
  int32_t n_vocab = 0;
  int64_t n_params = 0;  // the elements of every tensor in the file
  // The type most of the weight matrices' elements are stored in, as llama.cpp names types in
  // upper case ("Q4_0", "F16"); and the file's ModelDigest (16 hex digits) and size.
  std::string quantization;
  std::string digest;
  int64_t file_bytes = 0;
};

// The engine's counters at one moment.
struct EngineStats {
  SchedulerStats scheduler;
  std::optional<MemoryGovernorStats> memory;  // unset: no budget control (memory_pressure 0)
};

class EngineFacade {
 public:
  // Pins `model`, served by `ctx` (whose drain Submit obeys; it outlives every facade). Made by
  // ServerContext::engine(). A null `model` (none could be loaded, `why`) answers with empty
  // values and refuses Resolve, Submit and ReportPressure with `why`.
  EngineFacade(std::shared_ptr<ServedModel> model, const ServerContext* ctx,
               Status why = Status::Ok());

  const std::string& model_id() const;
  int64_t n_ctx() const;
  ModelInfo Info() const;

  // The model's tokenizer (llama.cpp's rules; see engine/tokenizer/tokenizer.h).
  std::vector<int32_t> Tokenize(std::string_view text, bool add_special, bool parse_special) const;
  std::string Detokenize(std::span<const int32_t> ids, bool remove_special,
                         bool render_special) const;
  // One token's bytes (possibly part of a UTF-8 character); "" for ids outside the vocabulary
  // and, unless `special`, for control tokens.
  std::string_view TokenPiece(int32_t id, bool special = false) const;
  int32_t n_vocab() const;

  // ResolveGeneration against this model: fills `*out` and returns true, or fills `*error`.
  bool Resolve(const GenerationSpec& spec, ResolvedGeneration* out, GenerationError* error) const;
  // A sink for one choice of a generation on this model; it must not outlive this facade (or a
  // copy of it). `metrics` may be null; `on_ready` runs on the scheduler thread, never blocking.
  std::shared_ptr<StreamingSink> MakeSink(StreamingSinkOptions options, Metrics* metrics,
                                          std::function<void()> on_ready) const;
  // Submits the n choices of `g` as one group, `sinks[i]` receiving choice i (SubmitGeneration).
  // A drain, a starved memory budget or the scheduler's refusal come back as a Status, and no
  // sink is called then. The caller keeps this facade until the sinks are done.
  Status Submit(const ResolvedGeneration& g,
                const std::vector<std::shared_ptr<StreamingSink>>& sinks) const;

  // Embeddings of the spec's inputs (embedding_spec.h: the bounds, the pooling): either the
  // job, its first inputs submitted, which calls `on_ready` once (on the scheduler thread,
  // never blocking) when done() turns true; or null with `*error` filled (a bad request, or the
  // scheduler's or the drain's refusal as for Submit). The caller keeps this facade until the
  // job is done, and calls EmbeddingJob::Cancel when its client goes away.
  std::shared_ptr<EmbeddingJob> Embed(const EmbeddingSpec& spec, std::function<void()> on_ready,
                                      GenerationError* error) const;
  // The relevance of each of the spec's documents to its query (rerank_spec.h: the bounds, a
  // model with a classification head), as an embedding job of pooling rank whose vectors are
  // the head's scores (the first is the relevance); otherwise as Embed.
  std::shared_ptr<EmbeddingJob> Rerank(const RerankSpec& spec, std::function<void()> on_ready,
                                       GenerationError* error) const;
  // The pooling an embedding gets when the request names none (ServedModel::pooling).
  PoolingType pooling() const;

  EngineStats Stats() const;
  // The host app's memory pressure, for the budget controller; returns the budget that follows
  // (bytes). Unsupported when budget control is off (memory_pressure 0).
  Result<uint64_t> ReportPressure(PressureLevel level, const std::string& source) const;

 private:
  // What Embed and Rerank share: `resolve` (false: refused, `*error` filled), the drain, the
  // job and its first window.
  std::shared_ptr<EmbeddingJob> StartJob(const std::function<bool(ResolvedEmbedding*)>& resolve,
                                         std::function<void()> on_ready,
                                         GenerationError* error) const;

  std::shared_ptr<ServedModel> model_;
  const ServerContext* ctx_;
  Status why_;  // with a null model_: why there is none
};

// `bytes` with each sequence that is not valid UTF-8 replaced by U+FFFD, as streamed text is.
std::string SanitizedUtf8(std::string_view bytes);

}  // namespace sparrow::server
