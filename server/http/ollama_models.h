#pragma once
// Ollama's model routes, from ServerContext::ListModels (never loading a model): GET /api/tags
// (every model clients may name: name, model, modified_at, size, digest, details {format
// "gguf", family, parameter_size, quantization_level}; family, parameter size, quantization and
// digest are known only for the loaded model, "" for the others until they load), POST
// /api/show (one of them, with model_info and capabilities), GET /api/ps (the loaded one, with
// expires_at from sleep_idle_seconds), GET /api/version, and GET|HEAD / answering "Ollama is
// running" as Ollama does, for the clients (Open WebUI, editors' plugins) that probe it.
#include "server/http/http_router.h"

namespace sparrow::server {

// The version /api/version reports: the Ollama API release whose fields these routes follow,
// which clients compare against to choose features (think, tool_name).
inline constexpr const char* kOllamaApiVersion = "0.9.0";

void AddOllamaModelRoutes(HttpRouter& r);

// "260K", "1.1B": a parameter count as Ollama writes it.
std::string ParameterSize(int64_t n_params);

}  // namespace sparrow::server
