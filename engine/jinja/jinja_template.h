#pragma once
// A Jinja2 interpreter for chat templates: runs a GGUF's `tokenizer.chat_template` and renders
// exactly what Python's jinja2 renders in the environment Hugging Face transformers'
// apply_chat_template uses (ImmutableSandboxedEnvironment, trim_blocks and lstrip_blocks on,
// loop controls, {% generation %}, its tojson, raise_exception and strftime_now).
//
// Supported: {{ }}, {% %}, {# #} and whitespace control; if/elif/else, for/else (loop.*,
// filters, unpacking, break/continue), set (also block and namespace attribute sets), macro,
// call, filter blocks; Python's literals and operators; jinja2's built-in filters and tests;
// the str, dict and list methods the sandbox allows. Anything else is an error naming the
// construct and its line:column, never a crash; rendering is bounded in the bytes it holds, work,
// output size and recursion (RenderLimits). Parsed templates are immutable: Render may run on many
// threads at once.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "engine/common/result.h"

namespace sparrow::jinja {

struct ParseOptions {
  // transformers' apply_chat_template renders with both on (jinja2's own default is off).
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

// What one render may take. The defaults fit a phone: a render holds at most ~64 MiB more than
// its context (plus the transient code points of one string operation, 4 bytes a character) and
// does at most 20 million steps. See budget.h for how bytes are counted.
struct RenderLimits {
  // Strings, lists and dicts the render holds at once, plus its output and capture buffers.
  size_t max_bytes = size_t{64} << 20;
  size_t max_output_bytes = size_t{16} << 20;  // the output; also caps any one string built
  size_t max_items = 1'000'000;                // caps any one list built
  // Statements, expressions, loop iterations, calls, items iterated, and every
  // RenderBudget::kBytesPerStep bytes built or scanned.
  int64_t max_steps = 20'000'000;
  int max_call_depth = 64;  // nested macro calls
  int max_depth = 1000;     // statements and expressions nested at run time (the C++ stack)
};

class Template {
 public:
  // Parses; errors (InvalidArgument for malformed text, Unsupported for a construct this
  // interpreter lacks) name line:column and the construct at fault, e.g.
  // "chat template line 3:14: filter 'foo' is not supported".
  static Result<Template> Parse(std::string_view source);
  static Result<Template> Parse(std::string_view source, const ParseOptions& options);

  // Renders with `context` (a JSON object: messages, tools, add_generation_prompt, bos_token,
  // eos_token, enable_thinking, ...; `sparrow_now`, "YYYY-MM-DD[THH:MM:SS]", fixes the date
  // strftime_now sees). raise_exception(msg) fails with InvalidArgument
  // "chat template line L:C: raise_exception: msg"; other runtime errors (undefined
  // attributes, type errors) with InvalidArgument naming the line; exhausted limits with
  // ResourceExhausted.
  Result<std::string> Render(const nlohmann::json& context) const;
  // The same, keeping the key order of the objects in `context` (nlohmann::json sorts keys),
  // which tojson of tool schemas shows as Python would.
  Result<std::string> Render(const nlohmann::ordered_json& context) const;
  // Either, within `limits` instead of the defaults.
  Result<std::string> Render(const nlohmann::ordered_json& context,
                             const RenderLimits& limits) const;

 private:
  struct Impl;
  explicit Template(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace sparrow::jinja
