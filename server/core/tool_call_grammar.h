#pragma once
// The grammar of the tool calls a chat answer makes, in the model's own call format (Hermes /
// Qwen3 `<tool_call>`, Llama 3.x `{"name": ..., "parameters": ...}`, Mistral `[TOOL_CALLS]`),
// each call's arguments keeping to its tool's `parameters` schema. It describes what follows
// the prompt's opening of a call (tool_choice "required" or a named function: the prompt ends
// with ToolCallOpening), or, lazily, what follows the format's trigger (tool_choice "auto").
// A tool whose schema the grammar engine cannot follow is refused when its `strict` is true,
// and otherwise gets any JSON object as arguments. Pure; thread-safe.
#include <string>
#include <vector>

#include "engine/common/result.h"
#include "server/chat/chat_template.h"
#include "server/chat/tool_call_parser.h"

namespace sparrow::server {

struct ToolCallGrammarSpec {
  ToolCallFormat format = ToolCallFormat::kHermes;
  const std::vector<ChatTool>* tools = nullptr;  // the tools the prompt offers
  std::string named;                             // a named function: its opening is in the prompt
  bool parallel = true;                          // more than one call allowed
  bool lazy = false;                             // "auto": the grammar starts at the trigger
  int max_schema_depth = 20;
};

struct ToolCallGrammar {
  std::string gbnf;
  std::string trigger;  // lazy only: the text that opens a call
};

// InvalidArgument naming "tools[i].function.parameters" when a strict tool's schema is refused.
Result<ToolCallGrammar> MakeToolCallGrammar(const ToolCallGrammarSpec& spec);

}  // namespace sparrow::server
