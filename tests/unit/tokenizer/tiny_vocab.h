#pragma once
// Small hand-built vocabularies for tokenizer unit tests.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/tokenizer/byte_encoding.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/vocab.h"

namespace sparrow::testing {

// An SPM vocabulary: <unk> <s> </s>, the 256 byte tokens <0x00>..<0xFF> (ids 3..258), then
// `pieces` (ids from 259 on) with their scores, all of type normal.
inline VocabData SpmData(const std::vector<std::pair<std::string, float>>& pieces) {
  VocabData d;
  d.model = "llama";
  d.tokens = {"<unk>", "<s>", "</s>"};
  d.token_types = {2, 3, 3};
  d.scores = {0, 0, 0};
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    d.tokens.push_back(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">");
    d.token_types.push_back(6);
    d.scores.push_back(0);
  }
  for (const auto& [text, score] : pieces) {
    d.tokens.push_back(text);
    d.token_types.push_back(1);
    d.scores.push_back(score);
  }
  return d;
}

// A byte-level BPE vocabulary: the 256 alphabet characters (id = byte value), then `extra`
// tokens, with `merges` ("left right", alphabet text) and pre-tokenizer `pre`.
inline VocabData BpeData(const std::vector<std::string>& extra,
                         const std::vector<std::string>& merges, const std::string& pre = "gpt-2") {
  VocabData d;
  d.model = "gpt2";
  d.pre = pre;
  for (int b = 0; b < 256; ++b)
    d.tokens.push_back(tokenizer::ByteToUnicodeUtf8(static_cast<uint8_t>(b)));
  for (const std::string& t : extra) d.tokens.push_back(t);
  d.merges = merges;
  d.has_merges = true;
  return d;
}

inline std::unique_ptr<Tokenizer> MakeTokenizer(VocabData data) {
  auto vocab = Vocab::Create(std::move(data));
  EXPECT_TRUE(vocab.ok()) << vocab.status().ToString();
  if (!vocab.ok()) return nullptr;
  return CreateTokenizer(std::move(vocab).value());
}

}  // namespace sparrow::testing
