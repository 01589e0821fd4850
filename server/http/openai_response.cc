#include "server/http/openai_response.h"

#include <chrono>
#include <random>

namespace sparrow::server {
namespace {

using json = nlohmann::json;

json Bytes(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

std::string RandomId() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  static const char* kDigits = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string out;
  for (int i = 0; i < 24; ++i) out += kDigits[rng() % 36];
  return out;
}

}  // namespace

ResponseMeta MakeResponseMeta(bool chat, const std::string& model) {
  ResponseMeta m;
  m.chat = chat;
  m.id = (chat ? "chatcmpl-" : "cmpl-") + RandomId();
  m.created = std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  m.model = model;
  return m;
}

json LogprobsJson(bool chat, const std::vector<TokenLogprob>& tokens, int32_t top_n,
                  const Tokenizer& tokenizer, size_t text_offset) {
  if (chat) {
    json content = json::array();
    for (const auto& t : tokens) {
      json top = json::array();
      for (int32_t i = 0; i < top_n && i < static_cast<int32_t>(t.top.size()); ++i) {
        const std::string piece(tokenizer.piece(t.top[i].first));
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
      top[std::string(tokenizer.piece(t.top[i].first))] = t.top[i].second;
    }
    tops.push_back(top);
    offs.push_back(offset);
    offset += t.piece.size();
  }
  return json{
      {"tokens", toks}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offs}};
}

json UsageJson(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens) {
  return json{{"prompt_tokens", prompt_tokens},
              {"completion_tokens", completion_tokens},
              {"total_tokens", prompt_tokens + completion_tokens},
              {"prompt_tokens_details", {{"cached_tokens", cached_tokens}}}};
}

json FullResponse(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices, bool logprobs,
                  int32_t top_n, const Tokenizer& tokenizer, int64_t prompt_tokens,
                  int64_t completion_tokens, int64_t cached_tokens) {
  json cs = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const auto& c = choices[i];
    json choice = {{"index", i}, {"finish_reason", c.finish_reason}};
    choice["logprobs"] =
        logprobs ? LogprobsJson(meta.chat, c.tokens, top_n, tokenizer, 0) : json(nullptr);
    if (meta.chat) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text}};
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
              {"usage", UsageJson(prompt_tokens, completion_tokens, cached_tokens)}};
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
  return json{{"id", meta.id},
              {"object", meta.chat ? "chat.completion.chunk" : "text_completion"},
              {"created", meta.created},
              {"model", meta.model},
              {"choices", json::array({choice})}};
}

}  // namespace sparrow::server
