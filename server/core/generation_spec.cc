#include "server/core/generation_spec.h"

#include "server/core/stop_matcher.h"

namespace sparrow::server {
namespace {

bool Fail(GenerationError* e, Status status, std::string param, std::string code = "") {
  e->status = std::move(status);
  e->param = std::move(param);
  e->code = std::move(code);
  return false;
}

// The prompt as token ids; false with `*error` filled when it cannot be made.
bool Tokens(const ServedModel& m, const GenerationSpec& spec, std::vector<int32_t>* out,
            GenerationError* error) {
  const Tokenizer& tok = *m.tokenizer;
  switch (spec.kind) {
    case PromptKind::kChat: {
      auto rendered = RenderChatTemplate(spec.messages, m.chat_template, true);
      if (!rendered.ok()) return Fail(error, rendered.status(), spec.fields.messages);
      // The template's markers are control tokens; what clients wrote is text (no forged turns).
      *out = tok.TokenizeTemplated(rendered->text, /*add_special=*/true, rendered->content);
      return true;
    }
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

}  // namespace

bool ResolveGeneration(const ServedModel& m, const GenerationSpec& spec, ResolvedGeneration* out,
                       GenerationError* error) {
  const GenerationSpec::FieldNames& f = spec.fields;
  if (!spec.model.empty() && spec.model != m.model_id) {
    return Fail(error,
                NotFound("The model '" + spec.model + "' does not exist; this server serves '" +
                         m.model_id + "'"),
                f.model, "model_not_found");
  }
  if (!Tokens(m, spec, &out->prompt, error)) return false;
  const std::string& prompt_field = spec.kind == PromptKind::kChat ? f.messages : f.prompt;
  if (out->prompt.empty()) {
    return Fail(error, InvalidArgument("'" + prompt_field + "' gives an empty prompt"),
                prompt_field);
  }

  const int64_t n_prompt = static_cast<int64_t>(out->prompt.size());
  const int64_t room = m.n_ctx - n_prompt;
  if (spec.max_tokens && *spec.max_tokens < 1) {
    return Fail(error,
                InvalidArgument("'" + f.max_tokens + "' is " + std::to_string(*spec.max_tokens) +
                                "; it must be at least 1"),
                f.max_tokens);
  }
  if (spec.max_tokens && n_prompt + *spec.max_tokens > m.n_ctx) {
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
  out->max_tokens =
      spec.max_tokens ? *spec.max_tokens : std::min(room, spec.default_max_tokens.value_or(room));

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
  if (m.memory && m.memory->stats().starved) {
    return Unavailable(
        "the device is critically short of memory and the memory budget is already at its floor "
        "(the KV pool at one context, the neuron cache empty): new requests wait until the "
        "pressure eases (running ones continue); retry later");
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
    r.sink = sinks[i];
    group.push_back(std::move(r));
  }
  return m.scheduler->SubmitGroup(std::move(group));
}

}  // namespace sparrow::server
