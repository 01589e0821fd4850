#include "server/grpc/grpc_request.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "api/openai/json_limits.h"
#include "api/openai/openai_chat.h"
#include "api/openai/openai_image.h"
#include "api/openai/openai_types.h"

namespace sparrow::server {
namespace {

Status BadField(const std::string& field, const std::string& what) {
  return InvalidArgument(field + " " + what);
}

// The constrained-output fields; ResolveGeneration compiles them.
Status OutputFormatOf(const v1::GenerateOptions& options, OutputFormat* out) {
  const int given =
      !options.json_schema().empty() + options.json_object() + !options.grammar().empty();
  if (given > 1) {
    return InvalidArgument(
        "options.json_schema, options.json_object and options.grammar: set at most one");
  }
  if (!options.json_schema().empty()) {
    *out = {OutputKind::kJsonSchema, options.json_schema(), "options.json_schema"};
  } else if (options.json_object()) {
    *out = {OutputKind::kJsonObject, "", "options.json_object"};
  } else if (!options.grammar().empty()) {
    *out = {OutputKind::kGrammar, options.grammar(), "options.grammar"};
  }
  return Status::Ok();
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
  for (const auto& [id, bias] : options.logit_bias()) out.logit_bias.emplace_back(id, bias);
  // A map's order is unspecified: sorted, the same request samples the same way.
  std::sort(out.logit_bias.begin(), out.logit_bias.end());
  if (options.has_forced_output()) out.forced_output = options.forced_output();
  if (options.has_prediction()) out.prediction = options.prediction();
  SPARROW_RETURN_IF_ERROR(OutputFormatOf(options, &out.output_format));
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
  spec.fields.logit_bias = "options.logit_bias";
  spec.fields.forced_output = "options.forced_output";
  spec.logit_bias = settings.logit_bias;
  spec.forced_output = settings.forced_output;
  spec.output_format = settings.output_format;
  spec.prediction = settings.prediction;
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
  SPARROW_ASSIGN_OR_RETURN(spec.images, ChatImages(request));
  SPARROW_ASSIGN_OR_RETURN(spec.tools, ChatTools(request));
  const std::string& choice = request.tool_choice();
  if (!request.tool_choice_function().empty()) {
    if (!choice.empty() && choice != "function") {
      return InvalidArgument("tool_choice is '" + choice +
                             "' and tool_choice_function is set; send one of them");
    }
    spec.tool_choice = ToolChoice::kFunction;
    spec.tool_choice_name = request.tool_choice_function();
  } else if (choice == "none") {
    spec.tool_choice = ToolChoice::kNone;
  } else if (choice == "required") {
    spec.tool_choice = ToolChoice::kRequired;
  } else if (!choice.empty() && choice != "auto") {
    return InvalidArgument("tool_choice is '" + choice +
                           "'; expected \"\", auto, none or required (or tool_choice_function)");
  }
  spec.parallel_tool_calls =
      request.has_parallel_tool_calls() ? request.parallel_tool_calls() : true;
  if (!request.reasoning_format().empty()) {
    ReasoningFormat f;
    if (!ReasoningFormatFromName(request.reasoning_format(), &f)) {
      return InvalidArgument("reasoning_format is '" + request.reasoning_format() +
                             "'; expected deepseek, auto or none");
    }
    spec.reasoning_format = f;
  }
  if (request.has_enable_thinking()) spec.enable_thinking = request.enable_thinking();
  spec.fields.tools = "tools";
  spec.fields.tool_choice = "tool_choice_function";
  return spec;
}

Result<std::vector<ChatTool>> ChatTools(const v1::ChatRequest& request) {
  // The same cap as the HTTP API's (OpenAI's): the tools are rendered into every prompt.
  if (static_cast<size_t>(request.tools_size()) > openai::kMaxTools) {
    return InvalidArgument("tools has " + std::to_string(request.tools_size()) +
                           " entries; at most " + std::to_string(openai::kMaxTools) +
                           " are allowed");
  }
  std::vector<ChatTool> out;
  std::set<std::string> names;
  for (int i = 0; i < request.tools_size(); ++i) {
    const v1::Tool& t = request.tools(i);
    const std::string field = "tools[" + std::to_string(i) + "]";
    if (!openai::IsValidToolName(t.name())) {
      return InvalidArgument(field + ".name is '" + t.name() +
                             "'; expected 1 to 64 of a-z, A-Z, 0-9, '_' and '-'");
    }
    if (!names.insert(t.name()).second) {
      return InvalidArgument(field + ".name repeats the tool name '" + t.name() + "'");
    }
    ChatTool tool{t.name(), t.description()};
    tool.strict = t.strict();
    if (!t.parameters_json().empty()) {
      SPARROW_ASSIGN_OR_RETURN(
          tool.parameters,
          openai::ParseBoundedJson(t.parameters_json(), field + ".parameters_json"));
      if (!tool.parameters.is_object()) {
        return InvalidArgument(field + ".parameters_json is not a JSON object");
      }
    }
    out.push_back(std::move(tool));
  }
  return out;
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
    const std::string field = "messages[" + std::to_string(i) + "]";
    ChatMessage msg{m.role(), m.content()};
    for (int j = 0; j < m.tool_calls_size(); ++j) {
      const v1::ToolCall& c = m.tool_calls(j);
      const std::string f = field + ".tool_calls[" + std::to_string(j) + "]";
      if (c.name().empty()) return InvalidArgument(f + ".name is empty");
      SPARROW_ASSIGN_OR_RETURN(const nlohmann::json args,
                               openai::ParseBoundedJson(c.arguments(), f + ".arguments"));
      if (!args.is_object()) return InvalidArgument(f + ".arguments is not a JSON object's text");
      msg.tool_calls.push_back({c.id(), c.name(), c.arguments()});
    }
    msg.tool_call_id = m.tool_call_id();
    msg.name = m.name();
    msg.reasoning_content = m.reasoning_content();
    out.push_back(std::move(msg));
  }
  // Roles, tool_call_id, tool calls only on assistant turns.
  SPARROW_RETURN_IF_ERROR(ValidateChatMessages(out));
  return out;
}

Result<std::vector<ImageInput>> ChatImages(const v1::ChatRequest& request) {
  std::vector<ImageInput> out;
  size_t bytes = 0;
  for (int i = 0; i < request.messages_size(); ++i) {
    const v1::ChatMessage& m = request.messages(i);
    uint32_t after = 0;
    for (int j = 0; j < m.images_size(); ++j) {
      const v1::ChatImage& image = m.images(j);
      const std::string field =
          "messages[" + std::to_string(i) + "].images[" + std::to_string(j) + "]";
      if (m.role() != "user") {
        return InvalidArgument("'" + field + "' is an image in a message of role '" + m.role() +
                               "': only user messages take images");
      }
      if (image.offset() > m.content().size() || image.offset() < after) {
        return InvalidArgument("'" + field + "' has offset " + std::to_string(image.offset()) +
                               "; expected " + std::to_string(after) + " to " +
                               std::to_string(m.content().size()) +
                               " (within the content, after the image before it)");
      }
      after = image.offset();
      if (out.size() == openai::kMaxRequestImages) {
        return InvalidArgument("'" + field +
                               "' is one image too many: a request may carry at most " +
                               std::to_string(openai::kMaxRequestImages) + " images");
      }
      bytes += image.data().size();
      if (bytes > openai::kMaxRequestImageBytes) {
        return InvalidArgument("'" + field + "' takes the request's images past " +
                               std::to_string(openai::kMaxRequestImageBytes) +
                               " bytes (the limit of a request's images together)");
      }
      out.push_back({image.data(), static_cast<size_t>(i), image.offset(), field});
    }
  }
  return out;
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
