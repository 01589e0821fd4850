#include "server/grpc/grpc_request.h"

#include <cmath>

namespace sparrow::server {
namespace {

Status BadField(const std::string& field, const std::string& what) {
  return InvalidArgument(field + " " + what);
}

}  // namespace

Result<GenerateSettings> ParseGenerateOptions(const v1::GenerateOptions& options,
                                              const SamplingParams& default_sampling) {
  GenerateSettings out;
  out.sampling = default_sampling;
  const v1::SamplingParams& s = options.sampling();
  SamplingParams& p = out.sampling;
  if (s.has_temperature()) p.temperature = s.temperature();
  if (s.has_top_p()) p.top_p = s.top_p();
  if (s.has_top_k()) {
    if (s.top_k() < 0) {
      return BadField("options.sampling.top_k",
                      "is " + std::to_string(s.top_k()) + "; expected >= 0 (0 = off)");
    }
    p.top_k = s.top_k();
  }
  if (s.has_min_p()) p.min_p = s.min_p();
  if (s.has_seed()) p.seed = s.seed();
  if (s.has_repeat_penalty()) p.repeat_penalty = s.repeat_penalty();
  if (s.has_presence_penalty()) p.presence_penalty = s.presence_penalty();
  if (s.has_frequency_penalty()) p.frequency_penalty = s.frequency_penalty();
  if (s.has_penalty_last_n()) p.penalty_last_n = s.penalty_last_n();
  // The sampler's own check names the parameter; say where it sits in the request.
  Status st = p.Validate();
  if (!st.ok()) return InvalidArgument("options.sampling." + st.message());

  if (options.has_max_tokens()) {
    if (options.max_tokens() <= 0) {
      return BadField("options.max_tokens",
                      "is " + std::to_string(options.max_tokens()) + "; expected > 0");
    }
    out.max_tokens = options.max_tokens();
  }
  out.stop.assign(options.stop().begin(), options.stop().end());
  out.logprobs = options.logprobs();
  return out;
}

namespace {

GenerationSpec SpecFromSettings(const std::string& model, const GenerateSettings& settings) {
  GenerationSpec spec;
  spec.model = model;
  spec.max_tokens = settings.max_tokens;
  spec.default_max_tokens = kDefaultGrpcMaxTokens;
  spec.sampling = settings.sampling;
  spec.stop = settings.stop;
  spec.logprobs = settings.logprobs;
  spec.fields.prompt = "prompt";
  spec.fields.max_tokens = "options.max_tokens";
  spec.fields.stop = "options.stop";
  spec.fields.sampling = "options.sampling";
  return spec;
}

}  // namespace

Result<GenerationSpec> GenerateSpec(const v1::GenerateRequest& request) {
  SPARROW_ASSIGN_OR_RETURN(GenerateSettings settings,
                           ParseGenerateOptions(request.options(), SamplingParams{}));
  GenerationSpec spec = SpecFromSettings(request.model(), settings);
  const bool has_text = !request.prompt().empty();
  const bool has_ids = request.prompt_tokens_size() > 0;
  if (has_text && has_ids) {
    return InvalidArgument("prompt and prompt_tokens are both set; send exactly one");
  }
  if (!has_text && !has_ids) {
    return InvalidArgument("prompt is empty (and no prompt_tokens); send exactly one of them");
  }
  if (has_ids) {
    spec.kind = PromptKind::kTokens;
    spec.tokens.assign(request.prompt_tokens().begin(), request.prompt_tokens().end());
    spec.fields.prompt = "prompt_tokens";
  } else {
    spec.kind = PromptKind::kText;
    spec.text = request.prompt();
    spec.add_special = request.has_add_special() ? request.add_special() : true;
    spec.parse_special = request.parse_special();
  }
  return spec;
}

Result<GenerationSpec> ChatSpec(const v1::ChatRequest& request) {
  SPARROW_ASSIGN_OR_RETURN(GenerateSettings settings,
                           ParseGenerateOptions(request.options(), SamplingParams{}));
  GenerationSpec spec = SpecFromSettings(request.model(), settings);
  spec.kind = PromptKind::kChat;
  SPARROW_ASSIGN_OR_RETURN(spec.messages, ChatMessages(request));
  return spec;
}

Result<std::vector<ChatMessage>> ChatMessages(const v1::ChatRequest& request) {
  if (request.messages_size() == 0) {
    return InvalidArgument("messages is empty; send at least one message");
  }
  std::vector<ChatMessage> out;
  out.reserve(request.messages_size());
  for (int i = 0; i < request.messages_size(); ++i) {
    const v1::ChatMessage& m = request.messages(i);
    if (m.role().empty()) {
      return InvalidArgument("messages[" + std::to_string(i) + "].role is empty");
    }
    out.push_back(ChatMessage{m.role(), m.content()});
  }
  return out;
}

Status CheckModel(const std::string& requested, const std::string& served_id) {
  if (requested.empty() || requested == served_id) return Status::Ok();
  return NotFound("model '" + requested + "' is not served here; ListModels gives '" + served_id +
                  "'");
}

Status CheckTokenIds(const google::protobuf::RepeatedField<int32_t>& ids, int32_t n_vocab,
                     const std::string& field) {
  for (int i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= n_vocab) {
      return InvalidArgument(field + "[" + std::to_string(i) + "] is " + std::to_string(ids[i]) +
                             "; expected a token id in [0, " + std::to_string(n_vocab) + ")");
    }
  }
  return Status::Ok();
}

}  // namespace sparrow::server
