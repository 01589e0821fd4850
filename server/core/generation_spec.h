#pragma once
// The one place a generation is prepared for both frontends: each frontend parses its own
// request format into a GenerationSpec; ResolveGeneration checks the model, applies the chat
// template, tokenizes (client text never becomes control tokens), checks the context, fills
// the defaults and validates; SubmitGeneration builds the scheduler requests around the
// frontend's sinks. HTTP and gRPC therefore accept, default and refuse the same requests.
// Pure functions over the served model; thread-safe.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/common/status.h"
#include "engine/runtime/sampler.h"
#include "engine/sched/request.h"
#include "server/chat/chat_output.h"
#include "server/chat/chat_template.h"
#include "server/core/image_inputs.h"
#include "server/core/output_grammar.h"
#include "server/core/server_context.h"

namespace sparrow::server {

enum class PromptKind { kChat, kText, kTokens };

// OpenAI's tool_choice: kNone leaves the tools out of the prompt and the output unparsed;
// kRequired and kFunction (which offers only that tool) end the prompt with a call's opening.
enum class ToolChoice { kAuto, kNone, kRequired, kFunction };

// What a client asked for, in engine terms.
struct GenerationSpec {
  std::string model;  // "" means the served model
  PromptKind kind = PromptKind::kText;
  std::vector<ChatMessage> messages;  // kChat: rendered with the model's template
  // kChat: the messages' images in order, decoded in ResolveGeneration (image_inputs.h).
  std::vector<ImageInput> images;
  std::vector<ChatTool> tools;  // kChat: what the model may call
  ToolChoice tool_choice = ToolChoice::kAuto;
  std::string tool_choice_name;  // kFunction
  bool parallel_tool_calls = true;
  std::optional<bool> enable_thinking;              // passed to the template
  std::optional<ReasoningFormat> reasoning_format;  // unset: the server's setting
  std::string text;                                 // kText
  std::vector<int32_t> tokens;                      // kTokens: used as given
  bool add_special = true;                          // kText: BOS/EOS as the vocabulary asks
  bool parse_special = false;  // kText: control tokens written in the text (opt-in)
  std::optional<int64_t> max_tokens;
  // When max_tokens is unset: this many, or fewer if the context has less room; unset: all
  // the room left.
  std::optional<int64_t> default_max_tokens;
  SamplingParams sampling;
  std::vector<std::string> stop;
  bool logprobs = false;
  int32_t top_logprobs = 0;
  int32_t n = 1;
  std::vector<std::pair<int32_t, float>> logit_bias;  // token id, bias in [-100, 100]
  // The answer keeps to a JSON schema, any JSON object or a GBNF grammar (kText: free).
  OutputFormat output_format;
  // Test-only (the server's allow_forced_output): the answer is this text (control tokens
  // written in it parsed) and then the end of generation, whatever the model would say.
  std::optional<std::string> forced_output;
  // OpenAI's Predicted Outputs: the answer expected, the draft of speculative decoding (the
  // answer stays the model's own). Tokenized as text, at most the context's length.
  std::optional<std::string> prediction;
  // The names this frontend's clients know the fields by, for error messages.
  struct FieldNames {
    std::string model = "model", prompt = "prompt", messages = "messages",
                max_tokens = "max_tokens", stop = "stop", sampling = "", tools = "tools",
                tool_choice = "tool_choice", logit_bias = "logit_bias",
                forced_output = "forced_output", thinking = "enable_thinking";
  } fields;
};

// A refusal: the status (its code chooses the HTTP or gRPC status), the field at fault as the
// client wrote it, and a machine-readable code ("context_length_exceeded", ...) where OpenAI
// clients expect one.
struct GenerationError {
  Status status;
  std::string param;
  std::string code;
};

// The code of a refusal to hand a request its model (ServerContext::EngineFor): NotFound
// "model_not_found", Unavailable "model_unavailable" (a switch or wake-up is under way: retry),
// else "model_load_failed".
std::string ModelErrorCode(const Status& s);

// A generation ready for the scheduler.
struct ResolvedGeneration {
  std::vector<int32_t> prompt;
  int64_t max_tokens = 0;
  SamplingParams sampling;
  std::vector<std::string> stop;
  bool logprobs = false;
  int32_t top_logprobs = 0;
  int32_t n = 1;
  std::vector<std::pair<int32_t, float>> logit_bias;
  std::vector<int32_t> forced_tokens;
  // Null: free output; else each choice gets its own matcher of this grammar.
  std::shared_ptr<const CompiledOutput> constraint;
  std::vector<int32_t> prediction;  // tokens; empty: none
  int64_t n_keep = 0;  // with context shift: the prompt's head it keeps (BOS, system prompt)
  // Chat: how to read the answer (reasoning, tool calls), and the control tokens it needs to
  // see as text (the tool-call and thinking markers).
  bool chat = false;
  ChatOutputOptions output;
  std::vector<int32_t> visible_special;
};

// Fills `*error` (the refusal's status, the field at fault, OpenAI's code) and returns false.
bool RefuseRequest(GenerationError* error, Status status, std::string param, std::string code = "");
// True when `requested` ("" for the served model) names the model `m` serves; else refuses the
// request (404 model_not_found, `field` at fault).
bool CheckRequestedModel(const ServedModel& m, const std::string& requested,
                         const std::string& field, GenerationError* error);

// Either fills `*out` and returns true, or fills `*error`.
bool ResolveGeneration(const ServedModel& model, const GenerationSpec& spec,
                       ResolvedGeneration* out, GenerationError* error);

// Submits the n choices as one group to `model`'s scheduler (the prompt is computed once),
// `sinks[i]` receiving choice i; choices after the first get distinct seeds. The scheduler's
// refusal (queue full, shutting down) and the server's drain come back as a Status; no sink is
// called then. The caller keeps `model` alive until the sinks are done.
Status SubmitGeneration(const ServerContext& ctx, ServedModel& model, const ResolvedGeneration& g,
                        const std::vector<std::shared_ptr<RequestSink>>& sinks);

}  // namespace sparrow::server
