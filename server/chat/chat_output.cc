#include "server/chat/chat_output.h"

namespace sparrow::server {

ChatOutputParser::ChatOutputParser(const ChatOutputOptions& o)
    : tools_(o.tool_format, o.tool_names, o.parallel_tool_calls) {
  if (o.split_reasoning) reasoning_.emplace(o.starts_in_thinking);
  if (!o.prefix.empty()) held_ = Push(o.prefix);
}

void ChatOutputParser::Take(ToolCallEvents ev, ChatDelta* out) {
  out->content += ev.content;
  if (out->tool_calls.empty()) out->first_call_index = calls_;
  for (auto& c : ev.calls) {
    out->tool_calls.push_back(std::move(c));
    ++calls_;
  }
}

void ChatOutputParser::Route(const ReasoningParts& parts, ChatDelta* out) {
  out->reasoning += parts.reasoning;
  if (!parts.content.empty()) Take(tools_.Push(parts.content), out);
}

ChatDelta ChatOutputParser::Push(std::string_view text) {
  ChatDelta out = std::move(held_);
  held_ = ChatDelta();
  if (out.tool_calls.empty()) out.first_call_index = calls_;
  if (reasoning_) {
    Route(reasoning_->Push(text), &out);
  } else {
    Take(tools_.Push(text), &out);
  }
  return out;
}

ChatDelta ChatOutputParser::Finish() {
  ChatDelta out = std::move(held_);
  held_ = ChatDelta();
  if (out.tool_calls.empty()) out.first_call_index = calls_;
  if (reasoning_) Route(reasoning_->Finish(), &out);
  Take(tools_.Finish(), &out);
  return out;
}

ChatDelta Concat(ChatDelta a, const ChatDelta& b) {
  a.reasoning += b.reasoning;
  a.content += b.content;
  a.tool_calls.insert(a.tool_calls.end(), b.tool_calls.begin(), b.tool_calls.end());
  return a;
}

}  // namespace sparrow::server
