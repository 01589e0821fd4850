// FullResponseText against its reference, the nlohmann document FullResponse builds: the same
// bytes as openai::Dump prints of it, and the same JSON when parsed, for chat and text
// completions with n > 1, logprobs with top_logprobs, tool calls, reasoning, strings needing
// escapes and token pieces that are not valid UTF-8. And JsonWriter's strings and numbers
// against nlohmann's for every byte and many random strings and doubles.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "api/openai/openai_types.h"
#include "server/http/json_writer.h"
#include "server/http/openai_response.h"

namespace sparrow::server {
namespace {

using json = nlohmann::json;

// Pieces that need escapes, that are not valid UTF-8 (a lone continuation byte, a cut sequence,
// a surrogate, an overlong form), and two that are the same bytes (ids 1 and 9).
const std::vector<std::string> kPieces = {"Once",
                                          " \"quoted\"",
                                          "back\\slash",
                                          "tab\tnew\nline\r",
                                          "\x01\x1f\x7f",
                                          "caf\xc3\xa9",
                                          "\xe6\xbc\xa2\xf0\x9f\x98\x80",
                                          "\xff",
                                          "\xe2\x82",
                                          " \"quoted\"",
                                          "\xed\xa0\x80",
                                          "\xc0\xaf",
                                          "\xf0\x9f"
                                          "A",
                                          "\b\f/"};

// The piece of a token, by id.
std::string_view PieceOf(int32_t id) {
  return kPieces.at(static_cast<size_t>(id));
}

TokenLogprob Token(int32_t id, float logprob, std::vector<std::pair<int32_t, float>> top) {
  return {id, kPieces[static_cast<size_t>(id)], logprob, std::move(top)};
}

std::vector<TokenLogprob> SomeTokens(int shift) {
  std::vector<TokenLogprob> t;
  for (int k = 0; k < 14; ++k) {
    const int32_t id = (k + shift) % 14;
    std::vector<std::pair<int32_t, float>> top;
    // Up to five alternatives (fewer than top_n for some), duplicates and odd values among them.
    for (int j = 0; j < (k % 6); ++j) {
      top.emplace_back((id + 4 * j) % 14,
                       -0.25f * static_cast<float>(j) - 1e-7f * static_cast<float>(k));
    }
    if (k == 3) top.emplace_back(1, -std::numeric_limits<float>::infinity());
    if (k == 4) top.emplace_back(9, -0.0f);  // the same piece as 1: the later one counts
    t.push_back(Token(id, k == 5 ? -123456.75f : -0.1f * static_cast<float>(k), std::move(top)));
  }
  return t;
}

ResponseMeta Meta(bool chat) {
  return {.chat = chat,
          .id = chat ? "chatcmpl-abc" : "cmpl-abc",
          .created = 1700000000,
          .model = "m\"odel\xff"};
}

void ExpectSameAsReference(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices,
                           bool logprobs, int32_t top_n) {
  const TokenPieceFn tok = PieceOf;
  const std::string text = FullResponseText(meta, choices, logprobs, top_n, tok, 11, 42, 3);
  const std::string reference =
      openai::Dump(FullResponse(meta, choices, logprobs, top_n, tok, 11, 42, 3));
  EXPECT_EQ(text, reference);
  const json parsed = json::parse(text);  // throws (fails the test) on invalid JSON
  EXPECT_EQ(parsed, json::parse(reference));
  EXPECT_EQ(parsed["choices"].size(), choices.size());
  EXPECT_EQ(parsed["usage"]["total_tokens"], 53);
}

TEST(OpenAiResponseTextTest, ChatWithSeveralChoicesLogprobsToolCallsAndReasoning) {
  std::vector<ChoiceResult> choices(3);
  choices[0].text = "Hello \"world\"\n\\ caf\xc3\xa9 \x02";
  choices[0].reasoning = "thinking\t\xe2\x82";
  choices[0].tokens = SomeTokens(0);
  choices[0].finish_reason = "stop";
  choices[1].tool_calls = {{"call_1", "get_weather", R"({"city": "Paris \"FR\""})"},
                           {"call_2", "n\xffme", "{}"}};
  choices[1].tokens = SomeTokens(5);
  choices[1].finish_reason = "tool_calls";
  choices[2].text = "with a call";
  choices[2].tool_calls = {{"call_3", "f", "{\"x\":1}"}};
  choices[2].finish_reason = "length";
  ExpectSameAsReference(Meta(true), choices, true, 3);
  ExpectSameAsReference(Meta(true), choices, true, 0);
  ExpectSameAsReference(Meta(true), choices, false, 0);
  const TokenPieceFn tok = PieceOf;
  const json parsed = json::parse(FullResponseText(Meta(true), choices, true, 3, tok, 1, 2, 0));
  EXPECT_TRUE(parsed["choices"][1]["message"]["content"].is_null());
  EXPECT_EQ(parsed["choices"][1]["message"]["tool_calls"][0]["function"]["arguments"],
            R"({"city": "Paris \"FR\""})");
  EXPECT_EQ(parsed["choices"][0]["logprobs"]["content"][3]["top_logprobs"].size(), 3u);
}

TEST(OpenAiResponseTextTest, TextCompletionsWithTopLogprobsKeyedByPiece) {
  std::vector<ChoiceResult> choices(2);
  choices[0].text = "Once \"upon\"\r\n a \xf0\x9f\x98\x80 time\xc3";
  choices[0].tokens = SomeTokens(2);
  choices[0].finish_reason = "length";
  choices[1].text = "";
  choices[1].tokens = SomeTokens(9);
  choices[1].finish_reason = "stop";
  ExpectSameAsReference(Meta(false), choices, true, 5);
  ExpectSameAsReference(Meta(false), choices, true, 2);
  ExpectSameAsReference(Meta(false), choices, false, 0);
  // No choices at all is still a whole answer.
  ExpectSameAsReference(Meta(false), {}, true, 5);
}

// Every byte alone, and random strings mixing ASCII, control bytes, UTF-8 lead and
// continuation bytes: the same text as nlohmann's (invalid UTF-8 replaced alike).
TEST(JsonWriterTest, StringsAreEscapedAsNlohmannDoes) {
  for (int b = 0; b < 256; ++b) {
    const std::string s(1, static_cast<char>(b));
    std::string out;
    AppendJsonString(s, &out);
    EXPECT_EQ(out, openai::Dump(json(s))) << "byte " << b;
  }
  std::mt19937 rng(27);
  const unsigned char kBytes[] = {'a',  '"',  '\\', '\n', 0x01, 0x7f, 0x80, 0x8f, 0x9f, 0xa0, 0xbf,
                                  0xc0, 0xc2, 0xdf, 0xe0, 0xe1, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff};
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    const int len = static_cast<int>(rng() % 9);
    for (int k = 0; k < len; ++k) s.push_back(static_cast<char>(kBytes[rng() % sizeof kBytes]));
    std::string out;
    AppendJsonString(s, &out);
    ASSERT_EQ(out, openai::Dump(json(s)))
        << json(json::binary_t(std::vector<uint8_t>(s.begin(), s.end()))).dump();
    ASSERT_NO_THROW(json::parse(out));
  }
}

// Doubles: nlohmann's layout (1.0, 0.0001, 1e-05, 1e+16, -0.0; null when not finite), and for
// random ones the same value back (nlohmann's Grisu2 digits may be longer than the shortest).
TEST(JsonWriterTest, DoublesAreWrittenAsNlohmannDoes) {
  for (const double v : {0.0,
                         -0.0,
                         1.0,
                         -1.0,
                         100.0,
                         0.5,
                         0.1,
                         0.0001,
                         0.00001,
                         1e-5,
                         1e15,
                         1e16,
                         123456789012345.0,
                         1234567890123456.0,
                         1.5e300,
                         -2.5e-300,
                         5e-324,
                         static_cast<double>(-0.1f),
                         static_cast<double>(-1e-7f),
                         std::numeric_limits<double>::max()}) {
    std::string out;
    AppendJsonDouble(v, &out);
    EXPECT_EQ(out, openai::Dump(json(v))) << v;
  }
  for (const double v : {std::nan(""), std::numeric_limits<double>::infinity(),
                         -std::numeric_limits<double>::infinity()}) {
    std::string out;
    AppendJsonDouble(v, &out);
    EXPECT_EQ(out, "null");
  }
  std::mt19937_64 rng(6);
  int same_bytes = 0;
  for (int i = 0; i < 20000; ++i) {
    double v = 0;
    const uint64_t bits = rng();
    std::memcpy(&v, &bits, sizeof v);
    if (!std::isfinite(v)) continue;
    std::string out;
    AppendJsonDouble(v, &out);
    ASSERT_EQ(json::parse(out).get<double>(), v) << out;
    same_bytes += out == openai::Dump(json(v));
  }
  EXPECT_GT(same_bytes, 19000);
}

// Commas and nesting.
TEST(JsonWriterTest, WritesNestedArraysAndObjects) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("a");
  w.BeginArray();
  w.Int(-1);
  w.Uint(18446744073709551615u);
  w.Bool(true);
  w.Null();
  w.BeginObject();
  w.EndObject();
  w.BeginArray();
  w.EndArray();
  w.EndArray();
  w.Key("b");
  w.Double(2.5);
  w.EndObject();
  EXPECT_EQ(out, R"({"a":[-1,18446744073709551615,true,null,{},[]],"b":2.5})");
}

}  // namespace
}  // namespace sparrow::server
