#pragma once
// Builds the OpenAI response bodies (whole responses and stream chunks) for the chat and text
// completion endpoints. Pure functions, thread-safe.
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "server/chat/chat_output.h"
#include "server/core/streaming_sink.h"

namespace sparrow::server {

// Identity shared by every chunk of one response.
struct ResponseMeta {
  bool chat = false;
  std::string id;  // "chatcmpl-..." or "cmpl-..."
  int64_t created = 0;
  std::string model;
};

struct ChoiceResult {
  std::string text;  // chat: the content left once reasoning and tool calls are taken out
  std::string reasoning;
  std::vector<ChatToolCall> tool_calls;
  std::vector<TokenLogprob> tokens;
  std::string finish_reason;
};

// A token's bytes by its id (EngineFacade::TokenPiece): what the top logprobs name.
using TokenPieceFn = std::function<std::string_view(int32_t token)>;

ResponseMeta MakeResponseMeta(bool chat, const std::string& model);

// The "logprobs" object of a choice; `text_offset` is where these tokens start in the text.
nlohmann::json LogprobsJson(bool chat, const std::vector<TokenLogprob>& tokens, int32_t top_n,
                            const TokenPieceFn& piece, size_t text_offset);

// Predicted Outputs' counts (usage.completion_tokens_details), summed over the choices.
struct PredictionUsage {
  int64_t accepted = 0;
  int64_t rejected = 0;
};

// `cached_tokens`: prompt tokens served from the prefix cache (OpenAI's
// usage.prompt_tokens_details.cached_tokens); with `prediction`, completion_tokens_details.
nlohmann::json UsageJson(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens,
                         const PredictionUsage* prediction = nullptr);

// The whole answer of a non-streamed request (the reference FullResponseText is tested against).
nlohmann::json FullResponse(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices,
                            bool logprobs, int32_t top_n, const TokenPieceFn& piece,
                            int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens,
                            const PredictionUsage* prediction = nullptr);

// FullResponse's text (what openai::Dump prints of it), written straight onto one string
// without the document in between: the answer of a non-streamed request, n choices of top
// logprobs included, costs its text and little more.
std::string FullResponseText(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices,
                             bool logprobs, int32_t top_n, const TokenPieceFn& piece,
                             int64_t prompt_tokens, int64_t completion_tokens,
                             int64_t cached_tokens, const PredictionUsage* prediction = nullptr);

// One SSE chunk for choice `index`. `logprobs` may be null; `finish_reason` "" means not done.
// `role_only` makes the opening chat chunk (delta {"role": "assistant", "content": ""}).
// The chat chunks for what `delta` made certain: one with its reasoning and content (and
// `logprobs`; none when both are empty and logprobs is null), then per tool call one naming
// it (index, id, type, function name) and one with its arguments, as OpenAI streams them.
std::vector<nlohmann::json> ChatDeltaChunks(const ResponseMeta& meta, int index,
                                            const ChatDelta& delta, const nlohmann::json& logprobs);

nlohmann::json ChunkJson(const ResponseMeta& meta, int index, const std::string& text,
                         const nlohmann::json& logprobs, const std::string& finish_reason,
                         bool role_only = false);

}  // namespace sparrow::server
