#pragma once
// ServedModel: one loaded model with everything that serves it: its tokenizer, chat template,
// context length, sparse plan, compute pool and scheduler. A request holds the ServedModel it
// started on (a shared_ptr) until its last token, so switching the server to another model
// (the admin API's reload) never pulls a model, a tokenizer or a scheduler out from under a
// request. Immutable once built; the scheduler inside is thread-safe.
#include <memory>
#include <string>

#include "config/server_config.h"
#include "engine/common/result.h"
#include "engine/control/memory_governor.h"
#include "engine/kernels/thread_pool.h"
#include "engine/model/model.h"
#include "engine/model/pooling_type.h"
#include "engine/sched/scheduler.h"
#include "engine/sparse/sparse_plan.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/vision/clip_model.h"
#include "server/chat/chat_format.h"
#include "server/chat/reasoning_splitter.h"
#include "server/core/output_grammar.h"
#include "server/core/rerank_format.h"
#include "server/core/worker_ranges.h"

namespace sparrow::server {

struct ServedModel {
  std::string model_id;  // what clients name in "model"
  std::string path;      // the GGUF file
  std::string digest;    // ModelDigest of the file (16 hex digits), for the model listings
  // How chats are written and read (the template, its tool-call format, the markers' ids),
  // resolved once from the config's chat_template, chat_template_file or the GGUF's Jinja text.
  std::shared_ptr<const ChatFormat> chat;
  int64_t n_ctx = 0;  // positions one request may use (prompt + output)
  ReasoningFormat reasoning_format = ReasoningFormat::kDeepSeek;  // unless a request says
  bool allow_forced_output = false;  // requests may force the answer (tests)
  // Sequences outgrowing n_ctx drop the middle of their context; prompts longer than it are cut
  // the same way, and max_tokens may exceed the room the prompt leaves.
  bool context_shift = false;
  // Embeddings: the config's pooling, else the GGUF's pooling_type, else last (a decoder's).
  PoolingType pooling = PoolingType::kLast;
  // Rerank: how a (query, document) pair is written as one prompt (the GGUF's rerank template).
  RerankFormat rerank;
  // The process's own resident bytes beside the model's (runtime, libraries, vocabulary), as
  // measured when it was loaded: the memory budget's baseline.
  uint64_t baseline_bytes = 0;
  // Declaration order is destruction order in reverse: the scheduler goes first, while the
  // model, tokenizer and pool its step thread and sinks use are still alive.
  std::unique_ptr<Model> model;
  std::unique_ptr<Model> draft_model;  // model_draft: speculative decoding's drafter, or null
  std::unique_ptr<Tokenizer> tokenizer;
  // The config's mmproj: the vision encoder whose embeddings this model takes, or null.
  std::unique_ptr<vision::ClipModel> vision;
  // The grammars of constrained outputs (response_format, grammar, tool calls), compiled once
  // per distinct source; thread-safe.
  std::unique_ptr<OutputGrammarCache> grammars;
  std::unique_ptr<kernels::ThreadPool> pool;
  std::shared_ptr<const SparsePlan> sparse_plan;  // null: dense
  std::unique_ptr<Scheduler> scheduler;
  // With `workers`: the layer ranges other devices compute, and where each layer went (destroyed
  // before the scheduler: its watcher places layers into it).
  std::shared_ptr<const ConnectedWorkers> workers;
  // With `memory_pressure` on: resizes the KV pool and the neuron cache as the device's memory
  // pressure moves (destroyed first: it plans into the scheduler).
  std::unique_ptr<MemoryGovernor> memory;
};

// Loads the GGUF at `path` with the engine settings of `config` (threads, n_ctx, KV cache,
// batching, sparsity) and starts its scheduler. `model_id` "" means the file name without
// .gguf. With `workers` set, `connect` reaches them (empty: this build cannot). `replacing`: the
// model this one is to replace (a reload), whose baseline it takes (what the process holds now
// is mostly that model's). Errors name the file, the setting or the worker at fault.
Result<std::shared_ptr<ServedModel>> LoadServedModel(const ServerConfig& config,
                                                     const std::string& path,
                                                     const std::string& model_id,
                                                     const ConnectWorkersFn& connect = {},
                                                     const ServedModel* replacing = nullptr);

// The sparse plan the config asks for (keys sparsity, profile, sparsity_method); null for dense.
Result<std::shared_ptr<const SparsePlan>> MakeSparsePlanFromConfig(const ServerConfig& config,
                                                                   const Model& model,
                                                                   kernels::ThreadPool* pool);

// The model id for a model path: its file name without ".gguf".
std::string ModelIdFromPath(const std::string& path);

}  // namespace sparrow::server
