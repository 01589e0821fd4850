#pragma once
// ToolCallParser: finds the tool calls in a model's output as it arrives, in the format its
// template family taught it: Hermes / Qwen (<tool_call>{"name", "arguments"}</tool_call>, any
// number), Llama 3.x (<|python_tag|>{"name", "parameters"} or a bare JSON object as the whole
// answer) and Mistral ([TOOL_CALLS][{...}, ...] or [TOOL_CALLS]name[ARGS]{...}). Text that may
// still turn out to be the start of a call is held back until it is decided, as StopMatcher
// holds back stop strings; a call that does not parse (bad JSON, no name, a tool that was not
// offered) is released as plain text. Not thread-safe: one per stream.
#include <string>
#include <string_view>
#include <vector>

#include "server/chat/chat_template.h"

namespace sparrow::server {

enum class ToolCallFormat { kNone, kHermes, kLlama3, kMistral };

// The format a template (family name or Jinja text) teaches: Hermes unless it is Llama 3 or
// Mistral.
ToolCallFormat ToolCallFormatFor(std::string_view template_name_or_jinja);
const char* ToolCallFormatName(ToolCallFormat f);

// The marker strings of a format that are control tokens in some vocabularies: the server has
// them rendered as text so the parser can see them.
std::vector<std::string> ToolCallMarkers(ToolCallFormat f);

// The start of a call in `f` (of the tool `name`, or of any with ""), for a prompt that makes
// the answer begin with it (tool_choice "required" or a named function).
std::string ToolCallOpening(ToolCallFormat f, const std::string& name);

// What became certain since the last call: text to pass on, and whole calls (id "call_...",
// arguments as compact JSON object text).
struct ToolCallEvents {
  std::string content;
  std::vector<ChatToolCall> calls;
};

class ToolCallParser {
 public:
  // `tools`: the names a call may use (empty: any). `parallel` false keeps the first call only.
  ToolCallParser(ToolCallFormat format, std::vector<std::string> tools, bool parallel = true);

  ToolCallEvents Push(std::string_view text);
  // The output has ended: held text becomes content unless it completes a call.
  ToolCallEvents Finish();

 private:
  bool StepText(ToolCallEvents* ev);
  bool StepCall(ToolCallEvents* ev, bool at_end);
  // Parses one call object; false when it is not a valid call.
  bool AddCall(std::string_view json_text, std::string name, ToolCallEvents* ev);
  void Malformed(std::string_view body, ToolCallEvents* ev);
  void Emit(ChatToolCall call, ToolCallEvents* ev);

  ToolCallFormat format_;
  std::vector<std::string> tools_;
  bool parallel_;
  std::vector<std::string> markers_;  // what opens a call
  std::string buf_;                   // text not decided yet
  bool in_call_ = false;
  std::string marker_;       // what opened the current call ("" for a bare JSON object)
  std::string dropped_;      // whitespace before it: dropped, unless the call is malformed
  bool at_start_ = true;     // nothing but whitespace released (Llama 3's bare JSON)
  bool after_call_ = false;  // drop the whitespace between calls
  int calls_ = 0;
};

// The whole output at once (non-streaming): Push then Finish.
ToolCallEvents ParseToolCalls(ToolCallFormat format, std::string_view text,
                              const std::vector<std::string>& tools, bool parallel = true);

}  // namespace sparrow::server
