#pragma once
// The request of OpenAI's Responses API (POST /v1/responses) and its validation: `input` as a
// string or a list of items (messages with text parts, function calls, their outputs,
// reasoning), instructions, function tools in the Responses shape (name at the top level),
// tool_choice, sampling, store, previous_response_id, reasoning, text.format, metadata. Errors
// name the field as the client wrote it ("input[2].call_id") and set `*param` to it.
// Pure functions, thread-safe.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/openai/openai_types.h"

namespace sparrow::openai {

// One item of a conversation, as the client sent it or as a stored response holds it.
struct ResponseItemIn {
  enum class Kind { kMessage, kFunctionCall, kFunctionCallOutput, kReasoning };
  Kind kind = Kind::kMessage;
  std::string role;       // kMessage: system ("developer" too), user or assistant
  std::string text;       // kMessage: its text parts joined; kFunctionCallOutput: the output;
                          // kReasoning: its reasoning (or summary) text
  std::string call_id;    // kFunctionCall, kFunctionCallOutput
  std::string name;       // kFunctionCall
  std::string arguments;  // kFunctionCall: a JSON object's text
};

struct ResponsesRequest {
  GenerationFields gen;  // model, max_output_tokens (as max_tokens), sampling, stream, user
  std::vector<ResponseItemIn> input;
  // The input exactly as given, a string becoming one user message: what a stored response
  // keeps of this turn.
  nlohmann::json input_items = nlohmann::json::array();
  std::string instructions;
  std::vector<ToolIn> tools;
  std::string tool_choice;       // "" (unset), "none", "auto", "required" or "function"
  std::string tool_choice_name;  // "function": its name
  bool parallel_tool_calls = true;
  bool store = true;
  std::string previous_response_id;
  std::optional<std::string> reasoning_effort;   // reasoning.effort: minimal, low, medium, high
  std::optional<std::string> reasoning_summary;  // reasoning.summary
  nlohmann::json metadata = nlohmann::json::object();  // at most 16 string values
  // text.format as the response echoes it (gen.format holds what constrains the answer).
  nlohmann::json text_format = {{"type", "text"}};
};

inline constexpr size_t kMaxResponseInputItems = 4096;
inline constexpr size_t kMaxMetadataKeys = 16;

// Parses the body of POST /v1/responses. On error, `*param` (if not null) names the field.
Result<ResponsesRequest> ParseResponsesRequest(const nlohmann::json& body, std::string* param);

// Parses a list of items (the request's `input`, or a stored conversation); `field` names the
// list in error messages ("input").
Status ParseResponseItems(const nlohmann::json& items, const std::string& field,
                          std::vector<ResponseItemIn>* out, std::string* param);

}  // namespace sparrow::openai
