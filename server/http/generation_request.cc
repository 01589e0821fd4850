#include "server/http/generation_request.h"

#include "api/openai/openai_types.h"

namespace sparrow::server {
namespace {

bool Fail(GenerationError* e, Status status, std::string param) {
  e->status = std::move(status);
  e->param = std::move(param);
  e->code.clear();
  return false;
}

void FillSampling(const openai::GenerationFields& g, GenerationSpec* spec,
                  PreparedGeneration* out) {
  SamplingParams& s = spec->sampling;
  s.temperature = g.temperature;
  s.top_p = g.top_p;
  // OpenAI has no top-k/min-p: off unless the client asks (llama.cpp server extensions).
  s.top_k = g.top_k.value_or(0);
  s.min_p = g.min_p.value_or(0.0f);
  s.presence_penalty = g.presence_penalty;
  s.frequency_penalty = g.frequency_penalty;
  s.seed = g.seed.value_or(SamplingParams::kRandomSeed);
  spec->logit_bias = g.logit_bias;
  spec->forced_output = g.forced_output;
  spec->model = g.model;
  spec->max_tokens = g.max_tokens;
  spec->n = g.n;
  spec->stop = g.stop;
  spec->logprobs = g.logprobs;
  spec->top_logprobs = g.top_logprobs;
  out->stream = g.stream;
  out->include_usage = g.include_usage;
  out->user = g.user;
}

// The chat parts in the server's terms.
void FillChat(const openai::ChatCompletionRequest& r, GenerationSpec* spec) {
  for (const auto& m : r.messages) {
    ChatMessage msg{m.role, m.content};
    for (const auto& c : m.tool_calls) msg.tool_calls.push_back({c.id, c.name, c.arguments});
    msg.tool_call_id = m.tool_call_id;
    msg.name = m.name;
    msg.reasoning_content = m.reasoning_content;
    spec->messages.push_back(std::move(msg));
  }
  FillTools(r.tools, r.tool_choice, r.tool_choice_name, r.parallel_tool_calls, spec);
  ReasoningFormat format;
  if (ReasoningFormatFromName(r.reasoning_format, &format)) spec->reasoning_format = format;
  spec->enable_thinking = r.enable_thinking;
}

}  // namespace

void FillTools(const std::vector<openai::ToolIn>& tools, const std::string& tool_choice,
               const std::string& tool_choice_name, bool parallel_tool_calls,
               GenerationSpec* spec) {
  for (const auto& t : tools) spec->tools.push_back({t.name, t.description, t.parameters});
  if (tool_choice == "none") spec->tool_choice = ToolChoice::kNone;
  if (tool_choice == "required") spec->tool_choice = ToolChoice::kRequired;
  if (tool_choice == "function") {
    spec->tool_choice = ToolChoice::kFunction;
    spec->tool_choice_name = tool_choice_name;
  }
  spec->parallel_tool_calls = parallel_tool_calls;
}

bool PrepareGeneration(const EngineFacade& engine, bool chat, const std::string& body,
                       PreparedGeneration* out, GenerationError* error) {
  std::string param;
  auto parsed = openai::ParseRequestBody(body, &param);
  if (!parsed.ok()) return Fail(error, parsed.status(), param);
  const nlohmann::json& j = *parsed;
  GenerationSpec spec;
  out->chat = chat;
  if (chat) {
    auto r = openai::ParseChatCompletionRequest(j, &param);
    if (!r.ok()) return Fail(error, r.status(), param);
    FillSampling(r->gen, &spec, out);
    spec.kind = PromptKind::kChat;
    FillChat(*r, &spec);
    // Chat output may fill the context when max_tokens is unset.
  } else {
    auto r = openai::ParseCompletionRequest(j, &param);
    if (!r.ok()) return Fail(error, r.status(), param);
    FillSampling(r->gen, &spec, out);
    spec.default_max_tokens = 16;  // the OpenAI default for /v1/completions
    if (!r->prompt_tokens.empty()) {
      spec.kind = PromptKind::kTokens;
      spec.tokens = r->prompt_tokens;
    } else {
      // Client text: "</s>" stays text, as in llama.cpp's server; token ids are the way to
      // send control tokens.
      spec.kind = PromptKind::kText;
      spec.text = r->prompt;
    }
    if (r->echo) {
      out->echo_text =
          r->prompt_tokens.empty() ? r->prompt : engine.Detokenize(r->prompt_tokens, true, false);
    }
  }
  return engine.Resolve(spec, &out->gen, error);
}

}  // namespace sparrow::server
