#pragma once
// Turns an OpenAI chat/text completion HTTP body into a GenerationSpec (parsed and validated
// fields, OpenAI's defaults), then prepares it like every frontend does (ResolveGeneration:
// model, template, tokens, context, defaults). Thread-safe.
#include <string>
#include <vector>

#include "api/openai/openai_types.h"
#include "server/core/engine_facade.h"
#include "server/core/generation_spec.h"

namespace sparrow::server {

struct PreparedGeneration {
  bool chat = false;
  ResolvedGeneration gen;
  std::string echo_text;  // completions with echo: the prompt text, sent before the output
  bool stream = false;
  bool include_usage = false;
  std::string user;
};

// An OpenAI request's tools, tool_choice ("", "none", "auto", "required" or "function" with
// its name) and parallel_tool_calls, in the server's terms.
void FillTools(const std::vector<openai::ToolIn>& tools, const std::string& tool_choice,
               const std::string& tool_choice_name, bool parallel_tool_calls, GenerationSpec* spec);

// An OpenAI request's output format (response_format, grammar, json_schema, or a Responses
// text.format) in the server's terms; a schema is read again from `body` in the client's order
// (the parsed tree sorts keys), since a schema's properties come out in that order.
void FillOutputFormat(const openai::OutputFormatIn& format, const std::string& body,
                      GenerationSpec* spec);

// Either `*out` is filled (returns true) or `*error` is.
bool PrepareGeneration(const EngineFacade& engine, bool chat, const std::string& body,
                       PreparedGeneration* out, GenerationError* error);
// The same on the engine of the model the body names (ServerContext::EngineFor: loading it
// when models_dir has it and it is not loaded; the caller waits), set in `*engine`.
bool PrepareGeneration(const ServerContext& ctx, bool chat, const std::string& body,
                       EngineFacade* engine, PreparedGeneration* out, GenerationError* error);

}  // namespace sparrow::server
