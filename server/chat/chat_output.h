#pragma once
// ChatOutputParser: what a chat answer's text becomes for the client, as it streams: thinking
// (to reasoning_content), tool calls, and the content left. Both frontends run one per choice on
// the text the StreamingSink hands them. Not thread-safe: one per stream.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/chat/reasoning_splitter.h"
#include "server/chat/tool_call_parser.h"

namespace sparrow::server {

// How a chat's output is to be read, decided when the request is prepared.
struct ChatOutputOptions {
  bool split_reasoning = false;     // reasoning_format "deepseek"
  bool starts_in_thinking = false;  // the prompt opened <think> (RenderedChat::opens_thinking)
  ToolCallFormat tool_format = ToolCallFormat::kNone;  // kNone: tools off (or tool_choice none)
  std::vector<std::string> tool_names;                 // the tools offered
  bool parallel_tool_calls = true;
  // Text the answer begins with that the prompt already holds (ToolCallOpening): parsed
  // before the model's own text.
  std::string prefix;
};

// Text and calls that became certain. Calls carry their index in the answer.
struct ChatDelta {
  std::string reasoning;
  std::string content;
  std::vector<ChatToolCall> tool_calls;
  int first_call_index = 0;  // index of tool_calls[0] among all the answer's calls
  bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
};

// `a` followed by `b`: the text of both, and all their calls.
ChatDelta Concat(ChatDelta a, const ChatDelta& b);

class ChatOutputParser {
 public:
  explicit ChatOutputParser(const ChatOutputOptions& options);

  ChatDelta Push(std::string_view text);
  ChatDelta Finish();
  // Calls found so far (the answer's finish_reason is "tool_calls" when there are any).
  int calls() const { return calls_; }

 private:
  void Route(const ReasoningParts& parts, ChatDelta* out);
  void Take(ToolCallEvents ev, ChatDelta* out);

  std::optional<ReasoningSplitter> reasoning_;
  ChatDelta held_;  // what the prefix released, if anything: goes out with the first Push
  ToolCallParser tools_;
  int calls_ = 0;
};

}  // namespace sparrow::server
