#pragma once
// Ollama's embedding routes: POST /api/embed (`input` a string or a list: {"model",
// "embeddings": [[...]], "total_duration", "load_duration", "prompt_eval_count"}) and the legacy
// POST /api/embeddings (`prompt`: {"embedding": [...]}), L2-normalised as every sparrowd
// embedding is, through the same path as /v1/embeddings (RunEmbedding: the embeddings spec,
// EngineFacade::Embed, the model loaded on demand). An input longer than the context is refused
// (400) whatever `truncate` says: sparrowd does not cut inputs.
#include "server/http/http_router.h"

namespace sparrow::server {

void AddOllamaEmbedRoutes(HttpRouter& r);

}  // namespace sparrow::server
