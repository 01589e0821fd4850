#include "server/http/openai_response.h"

#include <chrono>

#include "server/chat/random_id.h"

namespace sparrow::server {
namespace {

using json = nlohmann::json;

json Bytes(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

// The common frame of a stream chunk around one choice.
json Chunk(const ResponseMeta& meta, json choice) {
  return json{{"id", meta.id},
              {"object", meta.chat ? "chat.completion.chunk" : "text_completion"},
              {"created", meta.created},
              {"model", meta.model},
              {"choices", json::array({std::move(choice)})}};
}

json ToolCallJson(const ChatToolCall& c) {
  return json{{"id", c.id},
              {"type", "function"},
              {"function", {{"name", c.name}, {"arguments", c.arguments}}}};
}

}  // namespace

ResponseMeta MakeResponseMeta(bool chat, const std::string& model) {
  ResponseMeta m;
  m.chat = chat;
  m.id = (chat ? "chatcmpl-" : "cmpl-") + RandomAlnum(24);
  m.created = std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  m.model = model;
  return m;
}

json LogprobsJson(bool chat, const std::vector<TokenLogprob>& tokens, int32_t top_n,
                  const TokenPieceFn& piece_of, size_t text_offset) {
  if (chat) {
    json content = json::array();
    for (const auto& t : tokens) {
      json top = json::array();
      for (int32_t i = 0; i < top_n && i < static_cast<int32_t>(t.top.size()); ++i) {
        const std::string piece(piece_of(t.top[i].first));
        top.push_back({{"token", piece}, {"logprob", t.top[i].second}, {"bytes", Bytes(piece)}});
      }
      content.push_back({{"token", t.piece},
                         {"logprob", t.logprob},
                         {"bytes", Bytes(t.piece)},
                         {"top_logprobs", top}});
    }
    return json{{"content", content}};
  }
  json toks = json::array(), lps = json::array(), tops = json::array(), offs = json::array();
  size_t offset = text_offset;
  for (const auto& t : tokens) {
    toks.push_back(t.piece);
    lps.push_back(t.logprob);
    json top = json::object();
    for (int32_t i = 0; i < top_n && i < static_cast<int32_t>(t.top.size()); ++i) {
      top[std::string(piece_of(t.top[i].first))] = t.top[i].second;
    }
    tops.push_back(top);
    offs.push_back(offset);
    offset += t.piece.size();
  }
  return json{
      {"tokens", toks}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offs}};
}

json UsageJson(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens,
               const PredictionUsage* prediction) {
  json u{{"prompt_tokens", prompt_tokens},
         {"completion_tokens", completion_tokens},
         {"total_tokens", prompt_tokens + completion_tokens},
         {"prompt_tokens_details", {{"cached_tokens", cached_tokens}}}};
  if (prediction != nullptr) {
    u["completion_tokens_details"] = {{"accepted_prediction_tokens", prediction->accepted},
                                      {"rejected_prediction_tokens", prediction->rejected}};
  }
  return u;
}

json FullResponse(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices, bool logprobs,
                  int32_t top_n, const TokenPieceFn& piece, int64_t prompt_tokens,
                  int64_t completion_tokens, int64_t cached_tokens,
                  const PredictionUsage* prediction) {
  json cs = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const auto& c = choices[i];
    json choice = {{"index", i}, {"finish_reason", c.finish_reason}};
    choice["logprobs"] =
        logprobs ? LogprobsJson(meta.chat, c.tokens, top_n, piece, 0) : json(nullptr);
    if (meta.chat) {
      json message = {{"role", "assistant"}};
      // OpenAI's shape: content null when the answer is only tool calls.
      message["content"] = c.text.empty() && !c.tool_calls.empty() ? json(nullptr) : json(c.text);
      if (!c.reasoning.empty()) message["reasoning_content"] = c.reasoning;
      if (!c.tool_calls.empty()) {
        message["tool_calls"] = json::array();
        for (const auto& t : c.tool_calls) message["tool_calls"].push_back(ToolCallJson(t));
      }
      choice["message"] = std::move(message);
    } else {
      choice["text"] = c.text;
    }
    cs.push_back(std::move(choice));
  }
  return json{{"id", meta.id},
              {"object", meta.chat ? "chat.completion" : "text_completion"},
              {"created", meta.created},
              {"model", meta.model},
              {"choices", cs},
              {"usage", UsageJson(prompt_tokens, completion_tokens, cached_tokens, prediction)}};
}

json ChunkJson(const ResponseMeta& meta, int index, const std::string& text, const json& logprobs,
               const std::string& finish_reason, bool role_only) {
  json choice = {{"index", index}, {"logprobs", logprobs}};
  choice["finish_reason"] = finish_reason.empty() ? json(nullptr) : json(finish_reason);
  if (meta.chat) {
    json delta = json::object();
    if (role_only) {
      delta = {{"role", "assistant"}, {"content", ""}};
    } else if (!text.empty()) {
      delta["content"] = text;
    }
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  return Chunk(meta, std::move(choice));
}

std::vector<json> ChatDeltaChunks(const ResponseMeta& meta, int index, const ChatDelta& delta,
                                  const json& logprobs) {
  std::vector<json> out;
  if (!delta.reasoning.empty() || !delta.content.empty() || !logprobs.is_null()) {
    json d = json::object();
    if (!delta.reasoning.empty()) d["reasoning_content"] = delta.reasoning;
    if (!delta.content.empty()) d["content"] = delta.content;
    out.push_back(Chunk(meta, {{"index", index},
                               {"delta", std::move(d)},
                               {"logprobs", logprobs},
                               {"finish_reason", nullptr}}));
  }
  for (size_t i = 0; i < delta.tool_calls.size(); ++i) {
    const ChatToolCall& c = delta.tool_calls[i];
    const int call_index = delta.first_call_index + static_cast<int>(i);
    json head = {{"index", call_index},
                 {"id", c.id},
                 {"type", "function"},
                 {"function", {{"name", c.name}, {"arguments", ""}}}};
    json args = {{"index", call_index}, {"function", {{"arguments", c.arguments}}}};
    for (json* call : {&head, &args}) {
      out.push_back(Chunk(meta, {{"index", index},
                                 {"delta", {{"tool_calls", json::array({std::move(*call)})}}},
                                 {"logprobs", nullptr},
                                 {"finish_reason", nullptr}}));
    }
  }
  return out;
}

}  // namespace sparrow::server
