#pragma once
// Ollama's JSON requests (/api/chat, /api/generate, /api/embed and the legacy /api/embeddings,
// /api/show) parsed into typed requests and checked: types, ranges and what sparrowd cannot do
// (images, suffix, a per-request template) refused with an error naming the field, which is
// also set in `*param`. Bodies are read with openai::ParseRequestBody (the same size and
// nesting bounds as the OpenAI routes). Pure functions, thread-safe.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/ollama/ollama_options.h"
#include "api/openai/openai_types.h"

namespace sparrow::ollama {

// A call in Ollama's shape: the arguments are a JSON object, not a string.
struct ToolCall {
  std::string name;
  nlohmann::json arguments = nlohmann::json::object();
};

struct Message {
  std::string role;  // system, user, assistant or tool
  std::string content;
  std::string thinking;              // assistant
  std::vector<ToolCall> tool_calls;  // assistant
  std::string tool_name;             // tool: the function whose result this is
};

// What /api/chat and /api/generate share.
struct GenerationFields {
  std::string model;
  Options options;
  Format format;
  bool stream = true;  // Ollama streams unless told not to
  std::optional<double> keep_alive_s;
  std::optional<bool> think;
  // Test-only, as on the OpenAI routes (the server's allow_forced_output): the answer is this
  // text, whatever the model would say.
  std::optional<std::string> forced_output;
};

struct ChatRequest {
  GenerationFields gen;
  std::vector<Message> messages;  // empty: only load (or with keep_alive 0 unload) the model
  std::vector<openai::ToolIn> tools;
};

struct GenerateRequest {
  GenerationFields gen;
  std::string prompt;  // "": only load (or unload) the model
  std::string system;  // replaces the system prompt
  bool raw = false;    // the prompt as it is, no chat template
};

struct EmbedRequest {
  std::string model;
  std::vector<std::string> inputs;
  bool truncate = true;
  std::optional<int64_t> dimensions;
  std::optional<double> keep_alive_s;
};

struct ShowRequest {
  std::string model;
  bool verbose = false;
};

Result<ChatRequest> ParseChatRequest(const nlohmann::json& body, std::string* param);
Result<GenerateRequest> ParseGenerateRequest(const nlohmann::json& body, std::string* param);
// /api/embed: `input` a string or a list of strings.
Result<EmbedRequest> ParseEmbedRequest(const nlohmann::json& body, std::string* param);
// The legacy /api/embeddings: `prompt`, one string.
Result<EmbedRequest> ParseLegacyEmbedRequest(const nlohmann::json& body, std::string* param);
// `model` (or the older `name`).
Result<ShowRequest> ParseShowRequest(const nlohmann::json& body, std::string* param);

// The model a request names, as sparrowd knows it: Ollama's default tag ":latest" dropped.
std::string ModelName(const std::string& requested);

}  // namespace sparrow::ollama
