#pragma once
// Turns an OpenAI chat/text completion HTTP body into what the scheduler needs: parsed and
// validated fields, the templated and tokenized prompt, and the sampling settings, checking
// the model name and that prompt plus max_tokens fit the context. Thread-safe.
#include <string>
#include <vector>

#include "engine/sched/request.h"
#include "server/core/server_context.h"

namespace sparrow::server {

struct PreparedGeneration {
  bool chat = false;
  std::vector<int32_t> prompt;
  std::string echo_text;  // completions with echo: the prompt text, sent before the output
  SamplingParams sampling;
  int64_t max_tokens = 16;
  int32_t n = 1;
  std::vector<std::string> stop;
  bool logprobs = false;
  int32_t top_logprobs = 0;
  bool stream = false;
  bool include_usage = false;
  std::string user;
};

// An error with its HTTP status and the field at fault.
struct GenerationError {
  int http_status = 400;
  std::string message;
  std::string param;
  std::string code;
};

// Either `*out` is filled (returns true) or `*error` is.
bool PrepareGeneration(const ServerContext& ctx, bool chat, const std::string& body,
                       PreparedGeneration* out, GenerationError* error);

}  // namespace sparrow::server
