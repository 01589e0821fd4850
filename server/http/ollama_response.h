#pragma once
// Ollama's answers as JSON: the objects of an /api/chat or /api/generate stream (one per NDJSON
// line: the text so far as message.content / response, thinking, tool calls with object
// arguments, done false) and the last one (done true, done_reason and the counts and durations
// in nanoseconds); created_at as RFC 3339 in UTC; and the error body {"error": "..."}.
// Stateless, thread-safe.
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "server/chat/chat_output.h"
#include "server/core/generation_spec.h"
#include "server/http/http_util.h"

namespace sparrow::server {

// "2024-07-22T20:33:28.123648123Z".
std::string OllamaTime(std::chrono::system_clock::time_point t);

// What the last object of a generation reports.
struct OllamaTimings {
  int64_t total_ns = 0;  // the whole request
  int64_t load_ns = 0;   // waiting for the model (loaded on demand)
  int64_t prompt_eval_count = 0;
  int64_t prompt_eval_ns = 0;
  int64_t eval_count = 0;
  int64_t eval_ns = 0;
};

// One object of a generation: chat (message) or generate (response). `delta` is the text and
// calls since the last object (or, done, the whole answer of a request that does not stream).
nlohmann::json OllamaChunk(bool chat, const std::string& model, const ChatDelta& delta);
// The last object: `delta` as above, done true, `done_reason` and, when given, the timings.
nlohmann::json OllamaDone(bool chat, const std::string& model, const ChatDelta& delta,
                          const std::string& done_reason, const OllamaTimings* timings);

// Ollama's error body, {"error": message}, with `status`.
HttpResponse OllamaError(const HttpRequest& req, http::status status, const std::string& message);
// A refusal in Ollama's shape, its status from the code (400, 404, 429 and 503 with
// Retry-After, 500).
HttpResponse OllamaRefusal(const HttpRequest& req, const GenerationError& err);

}  // namespace sparrow::server
