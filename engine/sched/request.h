#pragma once
// What a frontend hands the scheduler, and how the scheduler answers it.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/common/status.h"
#include "engine/model/pooling_type.h"
#include "engine/runtime/output_constraint.h"
#include "engine/runtime/sampler.h"

namespace sparrow {

struct TokenEvent {
  int32_t token = 0;
  // log-softmax of the sampled token in the model's distribution (the constrained one when the
  // request has a constraint)
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top_logprobs;  // filled when requested
};

enum class FinishReason {
  kStop,       // end-of-generation token, or the sink asked to stop (stop string)
  kLength,     // max_tokens reached
  kContext,    // the context window is full
  kCancelled,  // the client went away or the server is shutting down
  kError,      // see FinishInfo::status
};
const char* FinishReasonName(FinishReason r);

struct FinishInfo {
  FinishReason reason = FinishReason::kStop;
  Status status;  // non-OK only for kError
  int64_t prompt_tokens = 0;
  int64_t cached_prompt_tokens = 0;  // prompt positions served by the prefix cache
  int64_t completion_tokens = 0;
  double queue_ms = 0;  // submit -> admitted
  double ttft_ms = 0;   // submit -> first token
  double total_ms = 0;  // submit -> finish
  int64_t preemptions = 0;
  // Speculative decoding: tokens drafted and accepted for this request, and of its prediction
  // (OpenAI's accepted_prediction_tokens / rejected_prediction_tokens).
  int64_t draft_tokens = 0;
  int64_t accepted_draft_tokens = 0;
  int64_t accepted_prediction_tokens = 0;
  int64_t rejected_prediction_tokens = 0;
  int64_t context_shifts = 0;
};

// Receives one request's output. Called on the scheduler thread: must be quick and must not
// block (copy the token and hand it to the frontend's own thread).
class RequestSink {
 public:
  virtual ~RequestSink() = default;
  // A sampled token. Returning false stops the request with kStop (e.g. a stop string matched).
  virtual bool OnToken(const TokenEvent& event) = 0;
  // An embedding request's result (GenerationRequest::embedding), once, before OnFinish: n_embd
  // floats of unit length (kNone: one such row per prompt token; kRank: the classification
  // head's scores, ClassifierHead::n_scores). Generations never get it.
  virtual void OnEmbedding(std::vector<float> embedding) { (void)embedding; }
  // Called exactly once, last.
  virtual void OnFinish(const FinishInfo& info) = 0;
  // The request left the queue and got its KV blocks (first admission only, not after a
  // preemption). For observers such as the admin API's request list.
  virtual void OnAdmitted() {}
  // Polled every step; true once the client has gone away (the request is then cancelled).
  virtual bool Cancelled() const { return false; }
};

struct GenerationRequest {
  std::vector<int32_t> prompt;  // already templated and tokenized, BOS included
  SamplingParams sampling;
  int64_t max_tokens = 128;
  int32_t top_logprobs = 0;  // alternatives to report per token (0..20)
  bool logprobs = false;
  bool interactive = true;  // served before batch (non-interactive) requests
  // Added to the logits before sampling (OpenAI's logit_bias: -100 bans a token, +100 all but
  // forces it); logprobs still report the model's own distribution.
  std::vector<std::pair<int32_t, float>> logit_bias;
  // Keeps the output inside a grammar or JSON schema: this sequence's own matcher (each of a
  // group's choices has its own; what they compiled is shared). Applied before logit_bias; the
  // logprobs are those of the constrained distribution; the sequence stops once the output is
  // whole. Null: free.
  std::shared_ptr<OutputConstraint> constraint;
  // The first generated tokens, taken as given instead of sampled (the model still runs on
  // them): makes a real model say a chosen text, for tests of what parses the output.
  std::vector<int32_t> forced_tokens;
  // OpenAI's predicted output, tokenized: the answer expected, used as the draft of
  // speculative decoding (the answer is still the model's own).
  std::vector<int32_t> prediction;
  // With context shift on: the prompt's first tokens a shift never drops (BOS and the system
  // prompt; llama.cpp's n_keep).
  int64_t n_keep = 0;
  // Set: an embedding request, pooled this way. Its prompt is computed like any prompt (beside
  // generations, in the same batches) and no token is sampled: the sink gets OnEmbedding, then
  // OnFinish with kStop and no completion tokens; the prompt may fill the whole context, and the
  // sampling fields are not used. It reuses cached prefix blocks only for kLast and a kRank by
  // the last token (the other poolings need every token's row). kRank needs the model's
  // classification head. Never part of a group.
  std::optional<PoolingType> embedding;
  std::shared_ptr<RequestSink> sink;
};

}  // namespace sparrow
