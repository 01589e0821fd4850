#pragma once
// Test helpers shared by the tokenizer tests: loading a tokenizer from a shared model file and
// decoding the hex strings of the llama.cpp reference vectors.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

#include "engine/model/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"

namespace sparrow::testing {

inline std::string FromHex(std::string_view hex) {
  auto nibble = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(nibble(hex[i]) * 16 + nibble(hex[i + 1])));
  }
  return out;
}

inline std::string ToHex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (char c : bytes) {
    out.push_back(kHex[static_cast<uint8_t>(c) >> 4]);
    out.push_back(kHex[static_cast<uint8_t>(c) & 15]);
  }
  return out;
}

// The file stays mapped as long as the tokenizer is used only during the test; the tokenizer
// copies everything it needs, so the GgufFile may be dropped right away.
inline std::unique_ptr<Tokenizer> LoadTokenizerFromPath(const std::string& path) {
  auto file = GgufFile::Open(path);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return nullptr;
  auto tok = LoadTokenizer(**file);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  if (!tok.ok()) return nullptr;
  return std::move(tok).value();
}

}  // namespace sparrow::testing
