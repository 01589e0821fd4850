#include "server/http/generation_request.h"

#include "api/openai/openai_types.h"
#include "server/core/chat_template.h"
#include "server/core/stop_matcher.h"

namespace sparrow::server {
namespace {

bool Fail(GenerationError* e, int status, std::string message, std::string param = "",
          std::string code = "") {
  e->http_status = status;
  e->message = std::move(message);
  e->param = std::move(param);
  e->code = std::move(code);
  return false;
}

void FillSampling(const openai::GenerationFields& g, PreparedGeneration* out) {
  SamplingParams& s = out->sampling;
  s.temperature = g.temperature;
  s.top_p = g.top_p;
  // OpenAI has no top-k/min-p: off unless the client asks (llama.cpp server extensions).
  s.top_k = g.top_k.value_or(0);
  s.min_p = g.min_p.value_or(0.0f);
  s.presence_penalty = g.presence_penalty;
  s.frequency_penalty = g.frequency_penalty;
  s.seed = g.seed.value_or(SamplingParams::kRandomSeed);
  out->n = g.n;
  out->stop = g.stop;
  out->logprobs = g.logprobs;
  out->top_logprobs = g.top_logprobs;
  out->stream = g.stream;
  out->include_usage = g.include_usage;
  out->user = g.user;
}

}  // namespace

bool PrepareGeneration(const ServerContext& ctx, bool chat, const std::string& body,
                       PreparedGeneration* out, GenerationError* error) {
  std::string param;
  auto parsed = openai::ParseRequestBody(body, &param);
  if (!parsed.ok()) return Fail(error, 400, parsed.status().message(), param);
  const nlohmann::json& j = *parsed;
  openai::GenerationFields gen;
  std::optional<int64_t> default_max;
  out->chat = chat;
  if (chat) {
    auto r = openai::ParseChatCompletionRequest(j, &param);
    if (!r.ok()) return Fail(error, 400, r.status().message(), param);
    gen = r->gen;
    std::vector<ChatMessage> messages;
    for (const auto& m : r->messages) messages.push_back({m.role, m.content});
    auto rendered = RenderChatTemplate(messages, ctx.chat_template, true);
    if (!rendered.ok()) return Fail(error, 400, rendered.status().message(), "messages");
    // The template's markers are control tokens; what clients wrote is text (no forged turns).
    out->prompt =
        ctx.tokenizer->TokenizeTemplated(rendered->text, /*add_special=*/true, rendered->content);
  } else {
    auto r = openai::ParseCompletionRequest(j, &param);
    if (!r.ok()) return Fail(error, 400, r.status().message(), param);
    gen = r->gen;
    default_max = 16;  // the OpenAI default for /v1/completions
    if (!r->prompt_tokens.empty()) {
      out->prompt = r->prompt_tokens;
      for (int32_t t : out->prompt) {
        if (!ctx.tokenizer->IsValid(t)) {
          return Fail(error, 400,
                      "'prompt' token id " + std::to_string(t) + " is outside the vocabulary of " +
                          std::to_string(ctx.tokenizer->n_vocab()),
                      "prompt");
        }
      }
    } else {
      // Client text: "</s>" stays text, as in llama.cpp's server; token ids are the way to
      // send control tokens.
      out->prompt = ctx.tokenizer->Tokenize(r->prompt, /*add_special=*/true,
                                            /*parse_special=*/false);
    }
    if (r->echo) {
      out->echo_text =
          r->prompt_tokens.empty() ? r->prompt : ctx.tokenizer->Detokenize(r->prompt_tokens, true);
    }
  }
  if (!gen.model.empty() && gen.model != ctx.model_id) {
    return Fail(
        error, 404,
        "The model '" + gen.model + "' does not exist; this server serves '" + ctx.model_id + "'",
        "model", "model_not_found");
  }
  if (out->prompt.empty())
    return Fail(error, 400, "the prompt is empty", chat ? "messages" : "prompt");
  FillSampling(gen, out);
  for (size_t i = 0; i < out->stop.size(); ++i) {
    if (out->stop[i].size() > kMaxStopBytes) {
      return Fail(error, 400,
                  "'stop' entry " + std::to_string(i) + " is " +
                      std::to_string(out->stop[i].size()) + " bytes; at most " +
                      std::to_string(kMaxStopBytes) + " are allowed",
                  "stop");
    }
  }

  const int64_t n_prompt = static_cast<int64_t>(out->prompt.size());
  const int64_t room = ctx.n_ctx - n_prompt;
  if (gen.max_tokens && n_prompt + *gen.max_tokens > ctx.n_ctx) {
    return Fail(error, 400,
                "This model's maximum context length is " + std::to_string(ctx.n_ctx) +
                    " tokens. However, you requested " +
                    std::to_string(n_prompt + *gen.max_tokens) + " tokens (" +
                    std::to_string(n_prompt) + " in the prompt, " +
                    std::to_string(*gen.max_tokens) + " for the completion).",
                "max_tokens", "context_length_exceeded");
  }
  if (room < 1) {
    return Fail(error, 400,
                "This model's maximum context length is " + std::to_string(ctx.n_ctx) +
                    " tokens. However, the prompt has " + std::to_string(n_prompt) +
                    " tokens, leaving no room for the completion.",
                chat ? "messages" : "prompt", "context_length_exceeded");
  }
  out->max_tokens = gen.max_tokens ? *gen.max_tokens : std::min(room, default_max.value_or(room));
  Status s = out->sampling.Validate();
  if (!s.ok()) return Fail(error, 400, s.message());
  return true;
}

}  // namespace sparrow::server
