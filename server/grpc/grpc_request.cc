#include "server/grpc/grpc_request.h"

#include <cmath>

namespace sparrow::server {
namespace {

Status BadField(const std::string& field, const std::string& what) {
  return InvalidArgument(field + " " + what);
}

}  // namespace

Result<GenerateSettings> ParseGenerateOptions(const v1::GenerateOptions& options,
                                              const SamplingParams& default_sampling,
                                              int64_t default_max_tokens) {
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

  out.max_tokens = default_max_tokens;
  if (options.has_max_tokens()) {
    if (options.max_tokens() <= 0) {
      return BadField("options.max_tokens",
                      "is " + std::to_string(options.max_tokens()) + "; expected > 0");
    }
    out.max_tokens = options.max_tokens();
  }

  if (static_cast<size_t>(options.stop_size()) > kMaxStopStrings) {
    return BadField("options.stop", "has " + std::to_string(options.stop_size()) +
                                        " entries; at most " + std::to_string(kMaxStopStrings) +
                                        " are allowed");
  }
  for (int i = 0; i < options.stop_size(); ++i) {
    const std::string& stop = options.stop(i);
    const std::string field = "options.stop[" + std::to_string(i) + "]";
    if (stop.empty()) return BadField(field, "is empty");
    if (stop.size() > kMaxStopBytes) {
      return BadField(field, "is " + std::to_string(stop.size()) + " bytes; at most " +
                                 std::to_string(kMaxStopBytes) + " are allowed");
    }
    out.stop.push_back(stop);
  }
  out.logprobs = options.logprobs();
  return out;
}

Result<std::vector<int32_t>> PromptTokens(const v1::GenerateRequest& request,
                                          const Tokenizer& tokenizer) {
  const bool has_text = !request.prompt().empty();
  const bool has_ids = request.prompt_tokens_size() > 0;
  if (has_text && has_ids) {
    return InvalidArgument("prompt and prompt_tokens are both set; send exactly one");
  }
  if (!has_text && !has_ids) {
    return InvalidArgument("prompt is empty (and no prompt_tokens); send exactly one of them");
  }
  if (has_ids) {
    SPARROW_RETURN_IF_ERROR(
        CheckTokenIds(request.prompt_tokens(), tokenizer.n_vocab(), "prompt_tokens"));
    return std::vector<int32_t>(request.prompt_tokens().begin(), request.prompt_tokens().end());
  }
  const bool add_special = request.has_add_special() ? request.add_special() : true;
  std::vector<int32_t> ids =
      tokenizer.Tokenize(request.prompt(), add_special, request.parse_special());
  if (ids.empty()) return InvalidArgument("prompt tokenizes to no tokens");
  return ids;
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
