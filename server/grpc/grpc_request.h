#pragma once
// Validation and translation of sparrow.v1 request messages into engine types. Errors are
// InvalidArgument and name the offending field as the client wrote it ("options.max_tokens").
// Pure functions, thread-safe.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/common/result.h"
#include "server/chat/chat_template.h"
#include "server/core/generation_spec.h"
#include "server/core/stop_matcher.h"
#include "sparrow/v1/sparrow.pb.h"

namespace sparrow::server {

// Output length when options.max_tokens is unset (or the room left in the context, if less).
inline constexpr int64_t kDefaultGrpcMaxTokens = 128;

struct GenerateSettings {
  SamplingParams sampling;
  std::optional<int64_t> max_tokens;  // unset: the default above
  std::vector<std::string> stop;      // checked by ResolveGeneration (generation_spec.h)
  bool logprobs = false;
  std::vector<std::pair<int32_t, float>> logit_bias;  // checked by ResolveGeneration
  std::optional<std::string> forced_output;
  OutputFormat output_format;             // json_schema, json_object or grammar
  std::optional<std::string> prediction;  // Predicted Outputs (GenerationSpec::prediction)
};

// Fills unset sampling fields from `default_sampling`, then checks the values this message
// alone can judge.
Result<GenerateSettings> ParseGenerateOptions(const v1::GenerateOptions& options,
                                              const SamplingParams& default_sampling);

// What a Generate / Chat call asks for, for ResolveGeneration (the model, the prompt as text
// or ids (exactly one) or the messages, the options), with gRPC's field names.
Result<GenerationSpec> GenerateSpec(const v1::GenerateRequest& request);
Result<GenerationSpec> ChatSpec(const v1::ChatRequest& request);

// The messages of a Chat call; at least one, each with a role; tool calls with a name and
// JSON-object arguments.
Result<std::vector<ChatMessage>> ChatMessages(const v1::ChatRequest& request);
// The messages' images (ChatMessage.images) in order, for user messages only, each offset
// within its content and after the one before; at most openai::kMaxRequestImages of them and
// openai::kMaxRequestImageBytes in all, as over HTTP. Decoded later, in ResolveGeneration.
Result<std::vector<ImageInput>> ChatImages(const v1::ChatRequest& request);

// The tools of a Chat call: valid, unique names; parameters a JSON object.
Result<std::vector<ChatTool>> ChatTools(const v1::ChatRequest& request);

// Token ids of a Detokenize call, checked against the vocabulary.
Status CheckTokenIds(const google::protobuf::RepeatedField<int32_t>& ids, int32_t n_vocab,
                     const std::string& field);

}  // namespace sparrow::server
