#pragma once
// The chat-only parts of an OpenAI request: messages (text and image_url content parts, tool
// calls, tool results, reasoning), tools, tool_choice, parallel_tool_calls, reasoning_format,
// chat_template_kwargs; and logit_bias, which both endpoints take. Errors name the field
// ("messages[2].tool_call_id") and set `*param` to it. Pure functions, thread-safe.
#include <nlohmann/json.hpp>
#include <string>

#include "api/openai/openai_types.h"

namespace sparrow::openai {

// A function name as OpenAI allows it: 1 to 64 of a-z, A-Z, 0-9, '_' and '-'.
bool IsValidToolName(const std::string& name);

Status ParseChatMessages(const nlohmann::json& body, std::vector<ChatMessageIn>* out,
                         std::string* param);
// A list of tools ({"type": "function", "function": {name, description, parameters,
// strict}}, at most kMaxTools, names distinct), the value of the request field `field`.
Status ParseToolList(const nlohmann::json& tools, const std::string& field,
                     std::vector<ToolIn>* out, std::string* param);
// tools, tool_choice, parallel_tool_calls, reasoning_format, chat_template_kwargs.
Status ParseChatTools(const nlohmann::json& body, ChatCompletionRequest* out, std::string* param);
// logit_bias ({"token id": bias}) and forced_output.
Status ParseOutputControls(const nlohmann::json& body, GenerationFields* out, std::string* param);

}  // namespace sparrow::openai
