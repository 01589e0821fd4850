#pragma once
// Ollama's API on sparrowd: POST /api/chat and /api/generate (on the same generation path as
// /v1/chat/completions: SubmitChoices, the StreamingSink, ChatOutputParser; a stream is NDJSON,
// application/x-ndjson, one object per line, and a stream that fails midway ends with an
// {"error"} line), POST /api/embed and /api/embeddings (ollama_embed.h), GET /api/tags,
// /api/ps, /api/version, POST /api/show and GET|HEAD / (ollama_models.h). Errors are Ollama's
// {"error": "..."} with its status codes (400, 404 "model 'x' not found", 429, 500, 503 with
// Retry-After). The routes take an API key like the OpenAI ones.
#include "server/http/http_router.h"

namespace sparrow::server {

void AddOllamaRoutes(HttpRouter& r);

}  // namespace sparrow::server
