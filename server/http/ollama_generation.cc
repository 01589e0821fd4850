#include "server/http/ollama_generation.h"

#include <algorithm>
#include <chrono>

#include "api/ollama/ollama_request.h"
#include "api/openai/openai_format.h"
#include "api/openai/openai_types.h"
#include "server/http/generation_request.h"

namespace sparrow::server {
namespace {

void FillSampling(const ollama::Options& o, int64_t n_ctx, GenerationSpec* spec) {
  SamplingParams& s = spec->sampling;
  s.temperature = o.temperature;
  s.top_k = o.top_k;
  s.top_p = o.top_p;
  s.min_p = o.min_p;
  s.repeat_penalty = o.repeat_penalty;
  s.penalty_last_n = o.repeat_last_n_context ? static_cast<int32_t>(n_ctx) : o.repeat_last_n;
  s.presence_penalty = o.presence_penalty;
  s.frequency_penalty = o.frequency_penalty;
  s.seed = o.seed.value_or(SamplingParams::kRandomSeed);
  spec->stop = o.stop;
  // Ollama's num_predict is "at most": an answer that meets the context ends there ("length")
  // instead of the request being refused.
  spec->default_max_tokens = o.num_predict;
}

// format: "json" (any object) or a schema, read again from the body in the client's order (a
// schema's properties come out in that order).
void FillFormat(const ollama::Format& f, const std::string& body, GenerationSpec* spec) {
  OutputFormat& o = spec->output_format;
  o.field = "format";
  switch (f.kind) {
    case ollama::Format::Kind::kNone:
      break;
    case ollama::Format::Kind::kJson:
      o.kind = OutputKind::kJsonObject;
      break;
    case ollama::Format::Kind::kSchema:
      o.kind = OutputKind::kJsonSchema;
      o.source = openai::JsonTextInOrder(body, "/format");
      if (o.source.empty()) o.source = f.schema;
      break;
  }
}

void FillThink(const std::optional<bool>& think, GenerationSpec* spec) {
  if (!think) return;  // the server's reasoning setting, as for chat completions
  spec->enable_thinking = *think;
  spec->reasoning_format = ReasoningFormat::kDeepSeek;  // to message.thinking / thinking
}

// Ollama's messages in the server's terms. Its calls carry no ids and its tool results name the
// tool: each call gets an id, and each result answers the oldest call not yet answered.
void FillMessages(const std::vector<ollama::Message>& in, GenerationSpec* spec) {
  std::vector<std::string> pending;  // ids of calls without a result yet, oldest first
  for (size_t i = 0; i < in.size(); ++i) {
    const ollama::Message& m = in[i];
    ChatMessage msg(m.role, m.content);
    if (m.role == "assistant") {
      msg.reasoning_content = m.thinking;
      for (size_t j = 0; j < m.tool_calls.size(); ++j) {
        const std::string id = "call_" + std::to_string(i) + "_" + std::to_string(j);
        msg.tool_calls.push_back(
            {id, m.tool_calls[j].name, openai::Dump(m.tool_calls[j].arguments)});
        pending.push_back(id);
      }
    }
    if (m.role == "tool") {
      msg.name = m.tool_name;
      if (!pending.empty()) {
        msg.tool_call_id = pending.front();
        pending.erase(pending.begin());
      }
    }
    spec->messages.push_back(std::move(msg));
  }
}

void NameFields(GenerationSpec* spec) {
  spec->fields.max_tokens = "options.num_predict";
  spec->fields.stop = "options.stop";
  spec->fields.thinking = "think";
}

}  // namespace

Result<EngineFacade> OllamaEngineFor(const ServerContext& ctx, const std::string& model,
                                     double* load_ms) {
  const auto start = std::chrono::steady_clock::now();
  Result<EngineFacade> engine = ctx.EngineFor(ollama::ModelName(model));
  *load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!engine.ok() && engine.status().code() == StatusCode::kNotFound) {
    return NotFound("model '" + model + "' not found");
  }
  return engine;
}

bool PrepareOllamaGeneration(const ServerContext& ctx, bool chat, const std::string& body,
                             std::optional<EngineFacade>* engine, PreparedOllama* out,
                             GenerationError* error) {
  std::string param;
  auto parsed = openai::ParseRequestBody(body, &param);
  if (!parsed.ok()) return RefuseRequest(error, parsed.status(), param);
  GenerationSpec spec;
  NameFields(&spec);
  ollama::GenerationFields fields;
  std::optional<ollama::ChatRequest> chat_req;
  std::optional<ollama::GenerateRequest> gen_req;
  if (chat) {
    auto r = ollama::ParseChatRequest(*parsed, &param);
    if (!r.ok()) return RefuseRequest(error, r.status(), param);
    chat_req = std::move(*r);
    fields = chat_req->gen;
    out->load_only = chat_req->messages.empty();
  } else {
    auto r = ollama::ParseGenerateRequest(*parsed, &param);
    if (!r.ok()) return RefuseRequest(error, r.status(), param);
    gen_req = std::move(*r);
    fields = gen_req->gen;
    out->load_only = gen_req->prompt.empty();
  }
  out->chat = chat;
  out->model = fields.model;
  out->stream = fields.stream;
  out->keep_alive_s = fields.keep_alive_s;
  // Unloading needs no model loaded first.
  if (out->load_only && fields.keep_alive_s && *fields.keep_alive_s == 0) return true;
  Result<EngineFacade> named = OllamaEngineFor(ctx, fields.model, &out->load_ms);
  if (!named.ok()) {
    error->status = named.status();
    error->param = "model";
    error->code = ModelErrorCode(named.status());
    return false;
  }
  *engine = std::move(named).value();
  if (out->load_only) return true;
  FillSampling(fields.options, (*engine)->n_ctx(), &spec);
  FillFormat(fields.format, body, &spec);
  FillThink(fields.think, &spec);
  spec.forced_output = fields.forced_output;
  spec.kind = PromptKind::kChat;
  if (chat) {
    FillMessages(chat_req->messages, &spec);
    FillTools(chat_req->tools, "", "", true, &spec);
  } else if (gen_req->raw) {
    spec.kind = PromptKind::kText;  // the client's own prompt format; control tokens stay text
    spec.text = gen_req->prompt;
  } else {
    if (!gen_req->system.empty()) spec.messages.push_back(ChatMessage("system", gen_req->system));
    spec.messages.push_back(ChatMessage("user", gen_req->prompt));
    spec.fields.messages = "prompt";
  }
  if (!(*engine)->Resolve(spec, &out->gen, error)) return false;
  // num_ctx: the context this answer must fit in, when smaller than the model's.
  const std::optional<int64_t>& num_ctx = fields.options.num_ctx;
  if (num_ctx && *num_ctx < (*engine)->n_ctx()) {
    const int64_t room = *num_ctx - static_cast<int64_t>(out->gen.prompt.size());
    if (room < 1) {
      return RefuseRequest(
          error,
          InvalidArgument("the prompt has " + std::to_string(out->gen.prompt.size()) +
                          " tokens, leaving no room for an answer within "
                          "'options.num_ctx' (" +
                          std::to_string(*num_ctx) + ")"),
          "options.num_ctx");
    }
    out->gen.max_tokens = std::min(out->gen.max_tokens, room);
  }
  return true;
}

}  // namespace sparrow::server
