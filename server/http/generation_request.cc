#include "server/http/generation_request.h"

#include "api/openai/openai_types.h"

namespace sparrow::server {

void FillOutputFormat(const openai::OutputFormatIn& f, const std::string& body,
                      GenerationSpec* spec) {
  using Kind = openai::OutputFormatIn::Kind;
  OutputFormat& o = spec->output_format;
  o.field = f.field;
  o.source = f.source;
  switch (f.kind) {
    case Kind::kText:
      o.kind = OutputKind::kText;
      break;
    case Kind::kJsonObject:
      o.kind = OutputKind::kJsonObject;
      break;
    case Kind::kGrammar:
      o.kind = OutputKind::kGrammar;
      break;
    case Kind::kJsonSchema:
      o.kind = OutputKind::kJsonSchema;
      if (std::string ordered = openai::JsonTextInOrder(body, f.pointer); !ordered.empty()) {
        o.source = std::move(ordered);
      }
      break;
  }
}

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
  spec->prediction = g.prediction;
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

// The chat parts in the server's terms; the images' bytes are moved out of `r`.
void FillChat(openai::ChatCompletionRequest& r, GenerationSpec* spec) {
  for (auto& m : r.messages) {
    for (auto& image : m.images) {
      spec->images.push_back(
          {std::move(image.bytes), spec->messages.size(), image.offset, std::move(image.field)});
    }
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

// Parses `body` into `*spec` and the HTTP side of `*out`; `*echo`: completions with echo.
bool ParseGeneration(bool chat, const std::string& body, GenerationSpec* spec,
                     PreparedGeneration* out, bool* echo, GenerationError* error) {
  std::string param;
  auto parsed = openai::ParseRequestBody(body, &param);
  if (!parsed.ok()) return Fail(error, parsed.status(), param);
  const nlohmann::json& j = *parsed;
  out->chat = chat;
  if (chat) {
    auto r = openai::ParseChatCompletionRequest(j, &param);
    if (!r.ok()) return Fail(error, r.status(), param);
    FillSampling(r->gen, spec, out);
    FillOutputFormat(r->gen.format, body, spec);
    spec->kind = PromptKind::kChat;
    FillChat(*r, spec);
    // Chat output may fill the context when max_tokens is unset.
  } else {
    auto r = openai::ParseCompletionRequest(j, &param);
    if (!r.ok()) return Fail(error, r.status(), param);
    FillSampling(r->gen, spec, out);
    FillOutputFormat(r->gen.format, body, spec);
    spec->default_max_tokens = 16;  // the OpenAI default for /v1/completions
    if (!r->prompt_tokens.empty()) {
      spec->kind = PromptKind::kTokens;
      spec->tokens = r->prompt_tokens;
    } else {
      // Client text: "</s>" stays text, as in llama.cpp's server; token ids are the way to
      // send control tokens.
      spec->kind = PromptKind::kText;
      spec->text = r->prompt;
    }
    *echo = r->echo;
  }
  return true;
}

// The echoed prompt of a completion, as text of `engine`'s model; then Resolve.
bool ResolveOn(const EngineFacade& engine, const GenerationSpec& spec, bool echo,
               PreparedGeneration* out, GenerationError* error) {
  if (echo) {
    out->echo_text =
        spec.kind == PromptKind::kTokens ? engine.Detokenize(spec.tokens, true, false) : spec.text;
  }
  return engine.Resolve(spec, &out->gen, error);
}

}  // namespace

bool PrepareGeneration(const EngineFacade& engine, bool chat, const std::string& body,
                       PreparedGeneration* out, GenerationError* error) {
  GenerationSpec spec;
  bool echo = false;
  if (!ParseGeneration(chat, body, &spec, out, &echo, error)) return false;
  return ResolveOn(engine, spec, echo, out, error);
}

bool PrepareGeneration(const ServerContext& ctx, bool chat, const std::string& body,
                       EngineFacade* engine, PreparedGeneration* out, GenerationError* error) {
  GenerationSpec spec;
  bool echo = false;
  if (!ParseGeneration(chat, body, &spec, out, &echo, error)) return false;
  Result<EngineFacade> named = ctx.EngineFor(spec.model);
  if (!named.ok()) {
    error->status = named.status();
    error->param = spec.fields.model;
    error->code = ModelErrorCode(named.status());
    return false;
  }
  *engine = std::move(named).value();
  return ResolveOn(*engine, spec, echo, out, error);
}

void FillTools(const std::vector<openai::ToolIn>& tools, const std::string& tool_choice,
               const std::string& tool_choice_name, bool parallel_tool_calls,
               GenerationSpec* spec) {
  for (const auto& t : tools) {
    spec->tools.push_back({t.name, t.description, t.parameters});
    spec->tools.back().strict = t.strict;
  }
  if (tool_choice == "none") spec->tool_choice = ToolChoice::kNone;
  if (tool_choice == "required") spec->tool_choice = ToolChoice::kRequired;
  if (tool_choice == "function") {
    spec->tool_choice = ToolChoice::kFunction;
    spec->tool_choice_name = tool_choice_name;
  }
  spec->parallel_tool_calls = parallel_tool_calls;
}

}  // namespace sparrow::server
