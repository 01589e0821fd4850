// The /v1/embeddings request parser: every input shape OpenAI's clients send, the refusals
// naming the field, and base64 as the clients decode it (little-endian float32).
#include "api/openai/openai_embeddings.h"

#include <gtest/gtest.h>

#include <cstring>

namespace sparrow::openai {
namespace {

using json = nlohmann::json;

std::string Error(const json& body) {
  std::string param;
  auto r = ParseEmbeddingsRequest(body, &param);
  return r.ok() ? "ok" : param + ": " + r.status().message();
}

TEST(OpenAiEmbeddingsTest, ParsesEveryInputShape) {
  std::string param;
  auto one = ParseEmbeddingsRequest(json{{"model", "m"}, {"input", "hi"}}, &param);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->model, "m");
  EXPECT_EQ(one->texts, std::vector<std::string>{"hi"});
  EXPECT_FALSE(one->base64);
  auto texts = ParseEmbeddingsRequest(
      json{{"input", {"a", "b"}}, {"encoding_format", "base64"}, {"dimensions", 8}}, &param);
  ASSERT_TRUE(texts.ok());
  EXPECT_EQ(texts->texts.size(), 2u);
  EXPECT_TRUE(texts->base64);
  EXPECT_EQ(texts->dimensions, 8);
  auto ids = ParseEmbeddingsRequest(json{{"input", {1, 2, 3}}}, &param);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->token_lists, (std::vector<std::vector<int32_t>>{{1, 2, 3}}));
  auto lists = ParseEmbeddingsRequest(json{{"input", {{1, 2}, {3}}}, {"pooling", "mean"}}, &param);
  ASSERT_TRUE(lists.ok());
  EXPECT_EQ(lists->token_lists, (std::vector<std::vector<int32_t>>{{1, 2}, {3}}));
  EXPECT_EQ(lists->pooling, "mean");
}

TEST(OpenAiEmbeddingsTest, RefusalsNameTheField) {
  EXPECT_EQ(Error(json{{"model", "m"}}), "input: 'input' is required");
  EXPECT_EQ(Error(json{{"input", json::array()}}), "input: 'input' is empty");
  EXPECT_EQ(Error(json{{"input", 5}}).rfind("input: 'input' must be a string", 0), 0u);
  EXPECT_EQ(Error(json{{"input", {"a", {1}}}}),
            "input: 'input[1]' mixes texts and token lists in one input");
  EXPECT_EQ(Error(json{{"input", {{1}, {2, -1}}}}),
            "input: 'input[1][1]' must be a token id (a non-negative integer)");
  EXPECT_EQ(Error(json{{"input", {1, "x"}}}),
            "input: 'input[1]' must be a token id (a non-negative integer)");
  EXPECT_EQ(Error(json{{"input", "x"}, {"encoding_format", "int8"}}),
            "encoding_format: 'encoding_format' must be float or base64, got 'int8'");
  EXPECT_EQ(Error(json{{"input", "x"}, {"dimensions", 0}}).rfind("dimensions:", 0), 0u);
  EXPECT_EQ(Error(json{{"input", "x"}, {"pooling", 3}}), "pooling: 'pooling' must be a string");
}

TEST(OpenAiEmbeddingsTest, Base64IsLittleEndianFloat32) {
  // 1.0f = 00 00 80 3f, -2.5f = 00 00 20 c0: "AACAPwAAIMA=" as Python's base64 writes it.
  const float v[] = {1.0f, -2.5f};
  EXPECT_EQ(Base64Floats(v), "AACAPwAAIMA=");
  EXPECT_EQ(Base64Floats(std::span<const float>(v, 1)), "AACAPw==");
  const float three[] = {0.5f, 0.25f, 3.0f};  // 12 bytes: no padding
  EXPECT_EQ(Base64Floats(three), "AAAAPwAAgD4AAEBA");
}

}  // namespace
}  // namespace sparrow::openai
