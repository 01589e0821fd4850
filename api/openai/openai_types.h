#pragma once
// The OpenAI-compatible JSON request types (/v1/chat/completions, /v1/completions) and their
// validation, plus the OpenAI error body. Parsing checks types and ranges; each error names
// the field ("'temperature' must be a number between 0 and 2") and reports it as `param`.
// Pure functions, thread-safe.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/openai/openai_format.h"
#include "engine/common/result.h"

namespace sparrow::openai {

// Fields shared by both endpoints.
struct GenerationFields {
  std::string model;                  // "" when absent
  std::optional<int64_t> max_tokens;  // absent: the endpoint's default
  float temperature = 1.0f;           // 0: greedy
  float top_p = 1.0f;
  std::optional<int32_t> top_k;  // extension (llama.cpp server): 0 = off
  std::optional<float> min_p;    // extension
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;  // at most 4
  float presence_penalty = 0;
  float frequency_penalty = 0;
  int32_t n = 1;
  bool logprobs = false;
  int32_t top_logprobs = 0;
  std::string user;
  bool stream = false;
  bool include_usage = false;                         // stream_options.include_usage
  std::vector<std::pair<int32_t, float>> logit_bias;  // token id, bias (-100 .. 100)
  std::optional<std::string> forced_output;           // extension, tests only
  OutputFormatIn format;  // response_format, or llama-server's grammar / json_schema
  // Predicted Outputs: prediction {"type": "content", "content": text or [{"type": "text",
  // "text": ...}]}, the answer expected (the draft of speculative decoding).
  std::optional<std::string> prediction;
};

// An assistant message's call; `arguments` is checked to be a JSON object's text.
struct ToolCallIn {
  std::string id;
  std::string name;
  std::string arguments;
};

// An image_url content part (openai_image.h): the image file's bytes from its data: URL (not
// yet decoded), where it sits among the message's text parts, and the part's name.
struct ImagePartIn {
  std::string bytes;
  size_t offset = 0;   // the message's content before it is content.substr(0, offset)
  std::string detail;  // "" (auto), "auto", "low" or "high"
  std::string field;   // "messages[1].content[2]", for errors about the image
};

struct ChatMessageIn {
  std::string role;                    // system ("developer" too), user, assistant, tool
  std::string content;                 // the text parts, joined
  std::vector<ImagePartIn> images;     // user messages: in the order of their parts
  std::vector<ToolCallIn> tool_calls;  // assistant
  std::string tool_call_id;            // tool: the id of the call it answers
  std::string name;
  std::string reasoning_content;  // assistant (DeepSeek, llama-server)
};

struct ToolIn {
  std::string name;  // [a-zA-Z0-9_-]{1,64}
  std::string description;
  nlohmann::json parameters = nlohmann::json::object();
  bool strict = false;  // function.strict: the arguments must keep to the schema
};

struct ChatCompletionRequest {
  GenerationFields gen;
  std::vector<ChatMessageIn> messages;
  std::vector<ToolIn> tools;
  std::string tool_choice;       // "" (unset), "none", "auto", "required" or "function"
  std::string tool_choice_name;  // "function": its name
  bool parallel_tool_calls = true;
  std::string reasoning_format;         // "" (the server's), "none", "deepseek" or "auto"
  std::optional<bool> enable_thinking;  // chat_template_kwargs.enable_thinking
};

struct CompletionRequest {
  GenerationFields gen;
  std::string prompt;                  // text prompt, or
  std::vector<int32_t> prompt_tokens;  // token ids when the prompt was an array of integers
  bool echo = false;
};

inline constexpr int32_t kMaxN = 16;
inline constexpr int32_t kMaxTopLogprobs = 20;
inline constexpr size_t kMaxTools = 128;       // as OpenAI
inline constexpr size_t kMaxLogitBias = 1024;  // entries

// Parses a request body. Never throws: malformed JSON and numbers a double cannot hold
// ("1e400") give InvalidArgument naming the byte offset and the last key read, with `*param`
// (if not null) set to that key; nesting deeper than kMaxJsonDepth (json_limits.h) gives
// InvalidArgument naming the path, with `*param` the top-level field.
Result<nlohmann::json> ParseRequestBody(std::string_view body, std::string* param);

// On error, `*param` (if not null) is set to the offending field's name.
Result<ChatCompletionRequest> ParseChatCompletionRequest(const nlohmann::json& body,
                                                         std::string* param);
Result<CompletionRequest> ParseCompletionRequest(const nlohmann::json& body, std::string* param);

// {"error": {"message", "type", "param", "code"}}; empty param/code become null.
nlohmann::json ErrorBody(const std::string& message, const std::string& type,
                         const std::string& param = "", const std::string& code = "");

// Serializes with invalid UTF-8 replaced by U+FFFD (token pieces can be partial characters).
std::string Dump(const nlohmann::json& j);

}  // namespace sparrow::openai
