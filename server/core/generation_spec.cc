#include "server/core/generation_spec.h"

#include "engine/sched/context_shift.h"
#include "server/core/stop_matcher.h"
#include "server/core/tool_call_grammar.h"

namespace sparrow::server {
namespace {

constexpr int64_t kMaxShiftContexts = 16;

bool Fail(GenerationError* e, Status status, std::string param, std::string code = "") {
  return RefuseRequest(e, std::move(status), std::move(param), std::move(code));
}

// The tools the prompt offers; false with `*error` filled when tool_choice names none of them.
bool OfferedTools(const GenerationSpec& spec, std::vector<ChatTool>* out, GenerationError* error) {
  const GenerationSpec::FieldNames& f = spec.fields;
  if (spec.tool_choice == ToolChoice::kNone) return true;
  if (spec.tools.empty()) {
    if (spec.tool_choice == ToolChoice::kAuto) return true;
    return Fail(error,
                InvalidArgument("'" + f.tool_choice + "' asks for a tool call but '" + f.tools +
                                "' is empty"),
                f.tool_choice);
  }
  if (spec.tool_choice != ToolChoice::kFunction) {
    *out = spec.tools;
    return true;
  }
  for (const ChatTool& t : spec.tools) {
    if (t.name == spec.tool_choice_name) out->push_back(t);
  }
  if (out->empty()) {
    return Fail(error,
                InvalidArgument("'" + f.tool_choice + "' names the function '" +
                                spec.tool_choice_name + "', which is not in '" + f.tools + "'"),
                f.tool_choice);
  }
  return true;
}

// The grammar of the answer's tool calls (tools offered, no response_format, no forced answer):
// from the first token when the prompt opened the call, else from the format's trigger.
bool ToolCallFormatOf(const GenerationSpec& spec, ToolCallFormat format, bool call_opened,
                      OutputFormat* out, GenerationError* error) {
  if (spec.output_format.kind != OutputKind::kText || spec.forced_output) return true;
  ToolCallGrammarSpec ts;
  ts.format = format;
  ts.tools = &spec.tools;
  if (spec.tool_choice == ToolChoice::kFunction) ts.named = spec.tool_choice_name;
  ts.parallel = spec.parallel_tool_calls;
  ts.lazy = !call_opened;
  ts.max_schema_depth = kMaxSchemaDepth;
  auto g = MakeToolCallGrammar(ts);
  if (!g.ok()) return Fail(error, g.status(), spec.fields.tools);
  *out = {OutputKind::kGrammar, std::move(g->gbnf), spec.fields.tools, std::move(g->trigger)};
  return true;
}

// The tokens of `prompt` a context shift keeps: the leading system messages as the template
// renders them alone (the common prefix with the whole chat), else the BOS.
int64_t SystemPromptTokens(const ServedModel& m, const GenerationSpec& spec,
                           const ChatOptions& options, const std::vector<int32_t>& prompt) {
  const int64_t bos = !prompt.empty() && prompt[0] == m.tokenizer->bos() ? 1 : 0;
  std::vector<ChatMessage> system;
  for (const ChatMessage& msg : spec.messages) {
    if (msg.role != "system") break;
    system.push_back(msg);
  }
  if (system.empty()) return bos;
  ChatOptions alone = options;
  alone.add_generation_prompt = false;
  auto rendered = m.chat->Render(system, alone);
  if (!rendered.ok()) return bos;
  const std::vector<int32_t> head =
      m.tokenizer->TokenizeTemplated(rendered->text, /*add_special=*/true, rendered->content);
  const auto common = std::mismatch(head.begin(), head.end(), prompt.begin(), prompt.end());
  return std::max<int64_t>(bos, common.first - head.begin());
}

// Renders and tokenizes a chat, and decides how its answer is read; `*tool_calls` gets the
// grammar of the calls when tools are offered.
bool ChatTokens(const ServedModel& m, const GenerationSpec& spec, ResolvedGeneration* out,
                OutputFormat* tool_calls, GenerationError* error) {
  ChatOptions options;
  if (!OfferedTools(spec, &options.tools, error)) return false;
  options.enable_thinking = spec.enable_thinking;
  const bool constrained = spec.output_format.kind != OutputKind::kText;
  // A constrained answer is the document itself: no thought before it unless the client asks.
  if (constrained && !options.enable_thinking) options.enable_thinking = false;
  const ChatFormat& format = *m.chat;
  auto rendered = format.Render(spec.messages, options);
  if (!rendered.ok()) return Fail(error, rendered.status(), spec.fields.messages);
  if (constrained && rendered->opens_thinking) {
    return Fail(error,
                InvalidArgument("'" + spec.output_format.field +
                                "' constrains the whole answer, and this prompt opens a thought "
                                "first; set " +
                                spec.fields.thinking + " to false"),
                spec.output_format.field);
  }
  ChatOutputOptions& o = out->output;
  o.split_reasoning =
      spec.reasoning_format.value_or(m.reasoning_format) == ReasoningFormat::kDeepSeek;
  o.starts_in_thinking = rendered->opens_thinking;
  if (!options.tools.empty()) {
    o.tool_format = format.tool_format();
    for (const ChatTool& t : options.tools) o.tool_names.push_back(t.name);
  }
  // "required" or a named function: the answer is made to begin the call (the prompt ends
  // with its opening), as close to enforcing it as decoding without a grammar gets. Not while
  // the model is inside an opened thought: the call comes after it.
  const bool must_call =
      spec.tool_choice == ToolChoice::kRequired || spec.tool_choice == ToolChoice::kFunction;
  if (must_call && !rendered->opens_thinking) {
    o.prefix = ToolCallOpening(
        o.tool_format, spec.tool_choice == ToolChoice::kFunction ? spec.tool_choice_name : "");
    rendered->text += o.prefix;
  }
  if (o.tool_format != ToolCallFormat::kNone &&
      !ToolCallFormatOf(spec, o.tool_format, !o.prefix.empty(), tool_calls, error)) {
    return false;
  }
  const Tokenizer& tok = *m.tokenizer;
  // The template's markers are control tokens; what clients wrote is text (no forged turns).
  out->prompt = tok.TokenizeTemplated(rendered->text, /*add_special=*/true, rendered->content);
  out->chat = true;
  if (m.context_shift) out->n_keep = SystemPromptTokens(m, spec, options, out->prompt);
  o.parallel_tool_calls = spec.parallel_tool_calls;
  out->visible_special = format.visible_markers(o.tool_format != ToolCallFormat::kNone);
  return true;
}

// The prompt as token ids; false with `*error` filled when it cannot be made.
bool Tokens(const ServedModel& m, const GenerationSpec& spec, ResolvedGeneration* resolved,
            OutputFormat* tool_calls, GenerationError* error) {
  const Tokenizer& tok = *m.tokenizer;
  std::vector<int32_t>* out = &resolved->prompt;
  switch (spec.kind) {
    case PromptKind::kChat:
      return ChatTokens(m, spec, resolved, tool_calls, error);
    case PromptKind::kText:
      *out = tok.Tokenize(spec.text, spec.add_special, spec.parse_special);
      return true;
    case PromptKind::kTokens:
      for (size_t i = 0; i < spec.tokens.size(); ++i) {
        const int32_t t = spec.tokens[i];
        if (!tok.IsValid(t)) {
          return Fail(error,
                      InvalidArgument(spec.fields.prompt + "[" + std::to_string(i) + "] is " +
                                      std::to_string(t) + ", outside the vocabulary of " +
                                      std::to_string(tok.n_vocab())),
                      spec.fields.prompt);
        }
      }
      *out = spec.tokens;
      return true;
  }
  return false;
}

// The compiled grammar of `format` (null for free text); false with `*error` filled when it is
// refused. One matcher is made here so that a grammar whose start overflows the matcher's
// bounds is refused now, not after the request is queued.
bool OutputConstraintOf(const ServedModel& m, const OutputFormat& format,
                        std::shared_ptr<const CompiledOutput>* out, GenerationError* error) {
  if (format.kind == OutputKind::kText) return true;
  if (!m.grammars) {
    return Fail(error, InvalidArgument("this server cannot constrain output"), format.field);
  }
  auto compiled = m.grammars->Compile(format);
  if (!compiled.ok()) return Fail(error, compiled.status(), format.field);
  if (auto probe = (*compiled)->NewMatcher(); !probe.ok()) {
    return Fail(error, InvalidArgument("'" + format.field + "': " + probe.status().message()),
                format.field);
  }
  *out = std::move(compiled).value();
  return true;
}

}  // namespace

bool RefuseRequest(GenerationError* error, Status status, std::string param, std::string code) {
  error->status = std::move(status);
  error->param = std::move(param);
  error->code = std::move(code);
  return false;
}

bool CheckRequestedModel(const ServedModel& m, const std::string& requested,
                         const std::string& field, GenerationError* error) {
  if (requested.empty() || requested == m.model_id) return true;
  return RefuseRequest(error,
                       NotFound("The model '" + requested +
                                "' does not exist; this server serves '" + m.model_id + "'"),
                       field, "model_not_found");
}

std::string ModelErrorCode(const Status& s) {
  switch (s.code()) {
    case StatusCode::kNotFound:
      return "model_not_found";
    case StatusCode::kUnavailable:
      return "model_unavailable";
    default:
      return "model_load_failed";
  }
}

namespace {

// The images are decoded (each bad one refused naming its part); a request that has any is then
// refused: by a model without a vision encoder as one it cannot read, by one with an encoder
// (--mmproj) because the embeddings are not placed in the prompt yet. Returns false, `*error`
// filled.
bool RefuseImages(const ServedModel& m, const GenerationSpec& spec, GenerationError* error) {
  std::vector<vision::Image> decoded;
  std::string param;
  Status st = DecodeImageInputs(spec.images, vision::ImageLimits{}, &decoded, &param);
  if (!st.ok()) return Fail(error, std::move(st), param);
  if (m.vision) {
    return Fail(error,
                InvalidArgument("model '" + m.model_id + "' has a vision encoder (" +
                                vision::ProjectorTypeName(m.vision->hparams().projector) +
                                ", --mmproj) but this sparrowd does not place image embeddings in "
                                "the prompt yet"),
                spec.images.front().field, "model_not_supported");
  }
  return Fail(error,
              InvalidArgument("model '" + m.model_id +
                              "' does not take images: it has no vision encoder (start sparrowd "
                              "with --mmproj FILE, the model's projector GGUF)"),
              spec.images.front().field, "model_not_supported");
}

}  // namespace

bool ResolveGeneration(const ServedModel& m, const GenerationSpec& spec, ResolvedGeneration* out,
                       GenerationError* error) {
  const GenerationSpec::FieldNames& f = spec.fields;
  if (!CheckRequestedModel(m, spec.model, f.model, error)) return false;
  if (m.model->config().embedding_only()) {
    return Fail(error,
                InvalidArgument("model '" + m.model_id + "' is an embedding model (" +
                                std::string(m.model->config().arch->name) +
                                "): it serves /v1/embeddings, not text generation"),
                f.model, "model_not_supported");
  }
  if (!spec.images.empty()) return RefuseImages(m, spec, error);
  OutputFormat tool_calls;
  if (!Tokens(m, spec, out, &tool_calls, error)) return false;
  const std::string& prompt_field = spec.kind == PromptKind::kChat ? f.messages : f.prompt;
  if (out->prompt.empty()) {
    return Fail(error, InvalidArgument("'" + prompt_field + "' gives an empty prompt"),
                prompt_field);
  }
  if (m.context_shift) {
    // As llama-server with context shift: a prompt that fills the context loses the oldest
    // part after what a shift keeps, and the answer may run past the context.
    if (!out->chat) out->n_keep = out->prompt[0] == m.tokenizer->bos() ? 1 : 0;
    out->prompt = TruncatePrompt(out->prompt, out->n_keep, m.n_ctx);
  }

  const int64_t n_prompt = static_cast<int64_t>(out->prompt.size());
  const int64_t room = m.n_ctx - n_prompt;
  if (spec.max_tokens && *spec.max_tokens < 1) {
    return Fail(error,
                InvalidArgument("'" + f.max_tokens + "' is " + std::to_string(*spec.max_tokens) +
                                "; it must be at least 1"),
                f.max_tokens);
  }
  if (spec.max_tokens && n_prompt + *spec.max_tokens > m.n_ctx && !m.context_shift) {
    return Fail(error,
                InvalidArgument("This model's maximum context length is " +
                                std::to_string(m.n_ctx) + " tokens. However, you requested " +
                                std::to_string(n_prompt + *spec.max_tokens) + " tokens (" +
                                std::to_string(n_prompt) + " in the prompt, " +
                                std::to_string(*spec.max_tokens) + " for the completion)."),
                f.max_tokens, "context_length_exceeded");
  }
  if (room < 1) {
    return Fail(
        error,
        InvalidArgument("This model's maximum context length is " + std::to_string(m.n_ctx) +
                        " tokens. However, the prompt has " + std::to_string(n_prompt) +
                        " tokens, leaving no room for the completion."),
        prompt_field, "context_length_exceeded");
  }
  // With context shift the answer may outgrow the context; its work stays bounded by
  // kMaxShiftContexts contexts' worth of tokens.
  if (m.context_shift && spec.max_tokens && *spec.max_tokens > kMaxShiftContexts * m.n_ctx) {
    return Fail(error,
                InvalidArgument("'" + f.max_tokens + "' is " + std::to_string(*spec.max_tokens) +
                                "; with context shift it may be at most " +
                                std::to_string(kMaxShiftContexts) + " contexts (" +
                                std::to_string(kMaxShiftContexts * m.n_ctx) + " tokens)"),
                f.max_tokens);
  }
  if (spec.max_tokens) {
    out->max_tokens = *spec.max_tokens;
  } else if (m.context_shift) {
    out->max_tokens = spec.default_max_tokens.value_or(m.n_ctx);
  } else {
    out->max_tokens = std::min(room, spec.default_max_tokens.value_or(room));
  }

  if (spec.stop.size() > kMaxStopStrings) {
    return Fail(
        error,
        InvalidArgument("'" + f.stop + "' has " + std::to_string(spec.stop.size()) +
                        " entries; at most " + std::to_string(kMaxStopStrings) + " are allowed"),
        f.stop);
  }
  for (size_t i = 0; i < spec.stop.size(); ++i) {
    const std::string field = f.stop + "[" + std::to_string(i) + "]";
    if (spec.stop[i].empty())
      return Fail(error, InvalidArgument("'" + field + "' is empty"), f.stop);
    if (spec.stop[i].size() > kMaxStopBytes) {
      return Fail(
          error,
          InvalidArgument("'" + field + "' is " + std::to_string(spec.stop[i].size()) +
                          " bytes; at most " + std::to_string(kMaxStopBytes) + " are allowed"),
          f.stop);
    }
  }
  Status s = spec.sampling.Validate();
  if (!s.ok()) {
    // The sampler's message starts with the parameter's name; say where it sits in the request.
    if (!f.sampling.empty()) s = InvalidArgument(f.sampling + "." + s.message());
    return Fail(error, s, f.sampling);
  }
  const int32_t n_vocab = m.tokenizer->n_vocab();
  for (const auto& [id, bias] : spec.logit_bias) {
    if (id < 0 || id >= n_vocab) {
      return Fail(error,
                  InvalidArgument("'" + f.logit_bias + "' names token id " + std::to_string(id) +
                                  ", outside the vocabulary of " + std::to_string(n_vocab)),
                  f.logit_bias);
    }
    if (!(bias >= -100 && bias <= 100)) {
      return Fail(error,
                  InvalidArgument("'" + f.logit_bias + "' biases must be between -100 and 100"),
                  f.logit_bias);
    }
  }
  out->logit_bias = spec.logit_bias;
  const OutputFormat& format =
      tool_calls.kind != OutputKind::kText ? tool_calls : spec.output_format;
  if (!OutputConstraintOf(m, format, &out->constraint, error)) return false;
  if (spec.forced_output) {
    if (!m.allow_forced_output) {
      return Fail(error,
                  InvalidArgument("'" + f.forced_output +
                                  "' is for tests and this server does not allow it "
                                  "(allow_forced_output)"),
                  f.forced_output);
    }
    out->forced_tokens = m.tokenizer->Tokenize(*spec.forced_output, false, true);
    const TokenId eos = m.tokenizer->special(SpecialToken::kEos);
    if (eos != kNoToken) out->forced_tokens.push_back(eos);
  }
  if (spec.prediction) {
    // Beyond the context it could never be used.
    out->prediction = m.tokenizer->Tokenize(*spec.prediction, false, false);
    if (static_cast<int64_t>(out->prediction.size()) > m.n_ctx) out->prediction.resize(m.n_ctx);
  }
  out->sampling = spec.sampling;
  out->stop = spec.stop;
  out->logprobs = spec.logprobs;
  out->top_logprobs = spec.top_logprobs;
  out->n = spec.n;
  return true;
}

Status SubmitGeneration(const ServerContext& ctx, ServedModel& m, const ResolvedGeneration& g,
                        const std::vector<std::shared_ptr<RequestSink>>& sinks) {
  if (ctx.draining.load()) {
    return Unavailable("the server is draining (an operator stopped admissions); retry later");
  }
  if (m.memory) {
    if (const MemoryGovernorStats mem = m.memory->stats(); mem.starved) {
      // The floor holds one request of the configured context: critical pressure from anywhere
      // on the device does not turn away the request that fits it, only those that do not.
      const SchedulerStats st = m.scheduler->Stats();
      const int64_t holding = st.running + st.waiting;
      if (holding > 0 || sinks.size() > 1) {
        const std::string held =
            holding > 0 ? std::to_string(holding) + " request(s) hold it now"
                        : "this request asks for " + std::to_string(sinks.size()) + " choices";
        return Unavailable(
            "the device is critically short of memory and the memory budget is at its floor of " +
            std::to_string(mem.floor_bytes >> 20) +
            " MiB (weights, scratch and the KV of one request; the neuron cache empty), which "
            "serves one single-choice request at a time and " +
            held + ": retry when it is done or the pressure eases");
      }
    }
  }
  std::vector<GenerationRequest> group;
  group.reserve(sinks.size());
  for (size_t i = 0; i < sinks.size(); ++i) {
    GenerationRequest r;
    r.prompt = g.prompt;
    r.sampling = g.sampling;
    if (r.sampling.seed != SamplingParams::kRandomSeed) r.sampling.seed += i;  // distinct choices
    r.max_tokens = g.max_tokens;
    r.logprobs = g.logprobs;
    r.top_logprobs = g.top_logprobs;
    r.logit_bias = g.logit_bias;
    r.forced_tokens = g.forced_tokens;
    if (g.constraint) {
      // Each choice its own matcher state; the compiled grammar is shared.
      auto matcher = g.constraint->NewMatcher();
      if (!matcher.ok()) return InvalidArgument(matcher.status().message());
      r.constraint = std::move(matcher).value();
    }
    r.prediction = g.prediction;
    r.n_keep = g.n_keep;
    r.sink = sinks[i];
    group.push_back(std::move(r));
  }
  return m.scheduler->SubmitGroup(std::move(group));
}

}  // namespace sparrow::server
