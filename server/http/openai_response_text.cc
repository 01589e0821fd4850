// FullResponseText: the non-streamed answer written as text, key for key what FullResponse's
// document prints (nlohmann's objects are sorted by key, so each object's keys come sorted here).
#include <algorithm>

#include "server/http/json_writer.h"
#include "server/http/openai_response.h"

namespace sparrow::server {
namespace {

void Bytes(JsonWriter& w, std::string_view piece) {
  w.BeginArray();
  for (unsigned char c : piece) w.Int(c);
  w.EndArray();
}

// One entry of a chat choice's logprobs.content, or of its top_logprobs.
void ChatTokenLogprob(JsonWriter& w, std::string_view piece, float logprob) {
  w.Key("bytes");
  Bytes(w, piece);
  w.Key("logprob");
  w.Double(logprob);
  w.Key("token");
  w.String(piece);
}

void ChatLogprobs(JsonWriter& w, const std::vector<TokenLogprob>& tokens, int32_t top_n,
                  const TokenPieceFn& piece_of) {
  w.BeginObject();
  w.Key("content");
  w.BeginArray();
  for (const TokenLogprob& t : tokens) {
    w.BeginObject();
    ChatTokenLogprob(w, t.piece, t.logprob);
    w.Key("top_logprobs");
    w.BeginArray();
    for (int32_t i = 0; i < top_n && i < static_cast<int32_t>(t.top.size()); ++i) {
      w.BeginObject();
      ChatTokenLogprob(w, piece_of(t.top[i].first), t.top[i].second);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

void CompletionLogprobs(JsonWriter& w, const std::vector<TokenLogprob>& tokens, int32_t top_n,
                        const TokenPieceFn& piece_of) {
  w.BeginObject();
  w.Key("text_offset");
  w.BeginArray();
  size_t offset = 0;
  for (const TokenLogprob& t : tokens) {
    w.Uint(offset);
    offset += t.piece.size();
  }
  w.EndArray();
  w.Key("token_logprobs");
  w.BeginArray();
  for (const TokenLogprob& t : tokens) w.Double(t.logprob);
  w.EndArray();
  w.Key("tokens");
  w.BeginArray();
  for (const TokenLogprob& t : tokens) w.String(t.piece);
  w.EndArray();
  w.Key("top_logprobs");
  w.BeginArray();
  std::vector<std::pair<std::string_view, float>> top;
  for (const TokenLogprob& t : tokens) {
    // An object keyed by piece: sorted, and of two alternatives with the same piece the later.
    top.clear();
    for (int32_t i = 0; i < top_n && i < static_cast<int32_t>(t.top.size()); ++i) {
      top.emplace_back(piece_of(t.top[i].first), t.top[i].second);
    }
    std::stable_sort(top.begin(), top.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    w.BeginObject();
    for (size_t i = 0; i < top.size(); ++i) {
      if (i + 1 < top.size() && top[i + 1].first == top[i].first) continue;
      w.Key(top[i].first);
      w.Double(top[i].second);
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

void Message(JsonWriter& w, const ChoiceResult& c) {
  w.BeginObject();
  w.Key("content");
  // OpenAI's shape: content null when the answer is only tool calls.
  if (c.text.empty() && !c.tool_calls.empty()) {
    w.Null();
  } else {
    w.String(c.text);
  }
  if (!c.reasoning.empty()) {
    w.Key("reasoning_content");
    w.String(c.reasoning);
  }
  w.Key("role");
  w.String("assistant");
  if (!c.tool_calls.empty()) {
    w.Key("tool_calls");
    w.BeginArray();
    for (const ChatToolCall& t : c.tool_calls) {
      w.BeginObject();
      w.Key("function");
      w.BeginObject();
      w.Key("arguments");
      w.String(t.arguments);
      w.Key("name");
      w.String(t.name);
      w.EndObject();
      w.Key("id");
      w.String(t.id);
      w.Key("type");
      w.String("function");
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
}

}  // namespace

std::string FullResponseText(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices,
                             bool logprobs, int32_t top_n, const TokenPieceFn& piece_of,
                             int64_t prompt_tokens, int64_t completion_tokens,
                             int64_t cached_tokens, const PredictionUsage* prediction) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("choices");
  w.BeginArray();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& c = choices[i];
    w.BeginObject();
    w.Key("finish_reason");
    w.String(c.finish_reason);
    w.Key("index");
    w.Uint(i);
    w.Key("logprobs");
    if (!logprobs) {
      w.Null();
    } else if (meta.chat) {
      ChatLogprobs(w, c.tokens, top_n, piece_of);
    } else {
      CompletionLogprobs(w, c.tokens, top_n, piece_of);
    }
    if (meta.chat) {
      w.Key("message");
      Message(w, c);
    } else {
      w.Key("text");
      w.String(c.text);
    }
    w.EndObject();
  }
  w.EndArray();
  w.Key("created");
  w.Int(meta.created);
  w.Key("id");
  w.String(meta.id);
  w.Key("model");
  w.String(meta.model);
  w.Key("object");
  w.String(meta.chat ? "chat.completion" : "text_completion");
  w.Key("usage");
  w.BeginObject();
  w.Key("completion_tokens");
  w.Int(completion_tokens);
  if (prediction != nullptr) {
    w.Key("completion_tokens_details");
    w.BeginObject();
    w.Key("accepted_prediction_tokens");
    w.Int(prediction->accepted);
    w.Key("rejected_prediction_tokens");
    w.Int(prediction->rejected);
    w.EndObject();
  }
  w.Key("prompt_tokens");
  w.Int(prompt_tokens);
  w.Key("prompt_tokens_details");
  w.BeginObject();
  w.Key("cached_tokens");
  w.Int(cached_tokens);
  w.EndObject();
  w.Key("total_tokens");
  w.Int(prompt_tokens + completion_tokens);
  w.EndObject();
  w.EndObject();
  return out;
}

}  // namespace sparrow::server
