#pragma once
// Turns an Ollama /api/chat or /api/generate body into a generation on the model it names
// (ServerContext::EngineFor, so models on demand load it): messages (tool calls with object
// arguments, tool results by tool_name), tools, options (Ollama's sampling defaults,
// num_predict as "at most", num_ctx as a cap on prompt + answer), format ("json" or a schema,
// the constrained-output path), think (the reasoning split into `thinking`), raw (no template)
// and system; then prepared as every frontend prepares one (ResolveGeneration). Blocks while a
// model loads: call it on the preparation pool. Thread-safe.
#include <optional>
#include <string>

#include "server/core/engine_facade.h"
#include "server/core/generation_spec.h"
#include "server/core/server_context.h"

namespace sparrow::server {

struct PreparedOllama {
  bool chat = false;
  std::string model;  // as the request named it (Ollama's answers echo it)
  ResolvedGeneration gen;
  bool stream = true;
  std::optional<double> keep_alive_s;  // negative: for ever
  // No messages (chat) or no prompt (generate): Ollama's way to load, or with keep_alive 0 to
  // unload, a model; nothing is generated.
  bool load_only = false;
  double load_ms = 0;  // the wait for the model (loading it on demand)
};

// Either `*engine` and `*out` are filled (returns true) or `*error` is: 400 naming the field,
// 404 for a model that is not served, 503 while a switch is under way. A load-only request
// with keep_alive 0 leaves `*engine` unset (nothing is loaded for it).
bool PrepareOllamaGeneration(const ServerContext& ctx, bool chat, const std::string& body,
                             std::optional<EngineFacade>* engine, PreparedOllama* out,
                             GenerationError* error);

// The engine of the model an Ollama request names (its ":latest" tag dropped); a model that is
// not served is NotFound "model 'x' not found", as Ollama words it. `*load_ms` gets the wait.
Result<EngineFacade> OllamaEngineFor(const ServerContext& ctx, const std::string& model,
                                     double* load_ms);

}  // namespace sparrow::server
