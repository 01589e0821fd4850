#pragma once
// Validation and translation of sparrow.v1 request messages into engine types. Errors are
// InvalidArgument and name the offending field as the client wrote it ("options.max_tokens").
// Pure functions, thread-safe.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/common/result.h"
#include "engine/runtime/sampler.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/core/chat_template.h"
#include "server/core/stop_matcher.h"
#include "sparrow/v1/sparrow.pb.h"

namespace sparrow::server {

struct GenerateSettings {
  SamplingParams sampling;
  int64_t max_tokens = 0;
  std::vector<std::string> stop;
  bool logprobs = false;
};

// Fills unset fields from the server's defaults, then checks every value.
Result<GenerateSettings> ParseGenerateOptions(const v1::GenerateOptions& options,
                                              const SamplingParams& default_sampling,
                                              int64_t default_max_tokens);

// The prompt of a Generate call as token ids: exactly one of prompt / prompt_tokens, ids in
// the vocabulary, not empty.
Result<std::vector<int32_t>> PromptTokens(const v1::GenerateRequest& request,
                                          const Tokenizer& tokenizer);

// The messages of a Chat call; at least one, each with a role.
Result<std::vector<ChatMessage>> ChatMessages(const v1::ChatRequest& request);

// An empty `requested` means "the served model"; anything else must equal `served_id`.
Status CheckModel(const std::string& requested, const std::string& served_id);

// Token ids of a Detokenize call, checked against the vocabulary.
Status CheckTokenIds(const google::protobuf::RepeatedField<int32_t>& ids, int32_t n_vocab,
                     const std::string& field);

}  // namespace sparrow::server
