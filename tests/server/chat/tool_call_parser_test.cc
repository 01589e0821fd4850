#include "server/chat/tool_call_parser.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

namespace sparrow::server {
namespace {

const std::vector<std::string> kTools = {"get_weather", "get_time"};

// Feeds `text` one character at a time, as a stream of tiny tokens, and gathers the events.
ToolCallEvents ByteByByte(ToolCallFormat f, std::string_view text, bool parallel = true) {
  ToolCallParser p(f, kTools, parallel);
  ToolCallEvents all;
  for (char c : text) {
    ToolCallEvents ev = p.Push(std::string_view(&c, 1));
    all.content += ev.content;
    for (auto& call : ev.calls) all.calls.push_back(call);
  }
  ToolCallEvents tail = p.Finish();
  all.content += tail.content;
  for (auto& call : tail.calls) all.calls.push_back(call);
  return all;
}

// Both ways of feeding must agree.
ToolCallEvents Parse(ToolCallFormat f, std::string_view text, bool parallel = true) {
  ToolCallEvents whole = ParseToolCalls(f, text, kTools, parallel);
  ToolCallEvents streamed = ByteByByte(f, text, parallel);
  EXPECT_EQ(whole.content, streamed.content) << text;
  EXPECT_EQ(whole.calls.size(), streamed.calls.size()) << text;
  for (size_t i = 0; i < whole.calls.size() && i < streamed.calls.size(); ++i) {
    EXPECT_EQ(whole.calls[i].name, streamed.calls[i].name);
    EXPECT_EQ(whole.calls[i].arguments, streamed.calls[i].arguments);
  }
  return whole;
}

TEST(ToolCallParserTest, HermesOneCall) {
  auto r = Parse(ToolCallFormat::kHermes,
                 "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
                 "</tool_call>");
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(r.calls[0].id.rfind("call_", 0), 0u);
}

TEST(ToolCallParserTest, HermesSeveralCallsAndTextAround) {
  auto r = Parse(ToolCallFormat::kHermes,
                 "Let me check.\n<tool_call>{\"name\": \"get_weather\", \"arguments\": "
                 "{\"city\": \"Paris\", \"unit\": \"c\"}}</tool_call>\n<tool_call>{\"name\": "
                 "\"get_time\", \"arguments\": {}}</tool_call>");
  EXPECT_EQ(r.content, "Let me check.\n");
  ASSERT_EQ(r.calls.size(), 2u);
  // The model's key order is kept.
  EXPECT_EQ(r.calls[0].arguments, R"({"city":"Paris","unit":"c"})");
  EXPECT_EQ(r.calls[1].name, "get_time");
  EXPECT_NE(r.calls[0].id, r.calls[1].id);
}

TEST(ToolCallParserTest, ParallelFalseKeepsTheFirstCall) {
  auto r = Parse(ToolCallFormat::kHermes,
                 "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>"
                 "<tool_call>{\"name\": \"get_weather\", \"arguments\": {}}</tool_call>",
                 /*parallel=*/false);
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "get_time");
}

TEST(ToolCallParserTest, MalformedCallsAreText) {
  for (const char* text : {
           "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": </tool_call>",
           "<tool_call>{\"arguments\": {}}</tool_call>",                       // no name
           "<tool_call>{\"name\": \"rm_rf\", \"arguments\": {}}</tool_call>",  // not offered
           "<tool_call>{\"name\": \"get_time\", \"arguments\": [1]}</tool_call>",
           "<tool_call>{\"name\": \"get_time\"",  // cut off
       }) {
    auto r = Parse(ToolCallFormat::kHermes, text);
    EXPECT_TRUE(r.calls.empty()) << text;
    EXPECT_EQ(r.content, text);
  }
}

TEST(ToolCallParserTest, HermesUnclosedButCompleteCallAtTheEnd) {
  auto r =
      Parse(ToolCallFormat::kHermes,
            "<tool_call>\n{\"name\": \"get_time\", \"arguments\": \"{\\\"tz\\\": \\\"UTC\\\"}\"}");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, R"({"tz":"UTC"})");  // a string holding JSON is unwrapped
}

TEST(ToolCallParserTest, HoldsBackOnlyWhatMayStartAMarker) {
  ToolCallParser p(ToolCallFormat::kHermes, kTools);
  EXPECT_EQ(p.Push("Hello <tool").content, "Hello ");
  EXPECT_EQ(p.Push("box> done").content, "<toolbox> done");
  EXPECT_EQ(p.Push("<").content, "");
  EXPECT_EQ(p.Finish().content, "<");
}

TEST(ToolCallParserTest, StreamedCallIsReportedWhenComplete) {
  ToolCallParser p(ToolCallFormat::kHermes, kTools);
  EXPECT_TRUE(p.Push("<tool_call>{\"name\": \"get_time\", ").calls.empty());
  EXPECT_TRUE(p.Push("\"arguments\": {}}").calls.empty());
  auto ev = p.Push("</tool_call>");
  ASSERT_EQ(ev.calls.size(), 1u);
  EXPECT_EQ(ev.content, "");
  EXPECT_TRUE(p.Finish().content.empty());
}

TEST(ToolCallParserTest, Llama3PythonTagAndBareJson) {
  auto r = Parse(ToolCallFormat::kLlama3,
                 "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, R"({"city":"Oslo"})");
  r = Parse(ToolCallFormat::kLlama3,
            "  {\"name\": \"get_time\", \"parameters\": {}}; {\"name\": \"get_weather\", "
            "\"parameters\": {\"city\": \"Rome\"}}");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.content, "");
  EXPECT_EQ(r.calls[1].name, "get_weather");
}

TEST(ToolCallParserTest, Llama3JsonThatIsNoCallIsText) {
  for (const char* text :
       {"{\"answer\": 42}", "The JSON {\"name\": \"get_time\"} is a call.",
        "{\"name\": \"get_time\", \"parameters\": {", "<|python_tag|>print(1)"}) {
    auto r = Parse(ToolCallFormat::kLlama3, text);
    EXPECT_TRUE(r.calls.empty()) << text;
    EXPECT_EQ(r.content, text);
  }
}

TEST(ToolCallParserTest, MistralBothForms) {
  auto r = Parse(ToolCallFormat::kMistral,
                 "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lyon\"}, "
                 "\"id\": \"abcdef123\"}, {\"name\": \"get_time\", \"arguments\": {}}]");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].id, "abcdef123");
  EXPECT_EQ(r.calls[1].name, "get_time");
  r = Parse(ToolCallFormat::kMistral,
            "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Nice\"}[TOOL_CALLS]get_time[ARGS]{}");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].arguments, R"({"city":"Nice"})");
  EXPECT_EQ(r.content, "");
}

TEST(ToolCallParserTest, MistralMalformed) {
  for (const char* text : {"[TOOL_CALLS] [{\"name\": \"get_time\"", "[TOOL_CALLS] hello there",
                           "[TOOL_CALLS] [{\"arguments\": {}}]"}) {
    auto r = Parse(ToolCallFormat::kMistral, text);
    EXPECT_TRUE(r.calls.empty()) << text;
    EXPECT_EQ(r.content, text);
  }
}

TEST(ToolCallParserTest, NoneFormatPassesEverything) {
  auto r = Parse(ToolCallFormat::kNone, "<tool_call>{\"name\": \"get_time\"}</tool_call>");
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.content, "<tool_call>{\"name\": \"get_time\"}</tool_call>");
}

TEST(ToolCallParserTest, FormatFromTemplate) {
  EXPECT_EQ(ToolCallFormatFor("chatml"), ToolCallFormat::kHermes);
  EXPECT_EQ(ToolCallFormatFor("llama3"), ToolCallFormat::kLlama3);
  EXPECT_EQ(ToolCallFormatFor("mistral"), ToolCallFormat::kMistral);
  EXPECT_EQ(ToolCallFormatFor("gemma"), ToolCallFormat::kHermes);
  EXPECT_EQ(ToolCallFormatFor("{{ '[INST]' }}{% if tools %}[TOOL_CALLS]{% endif %}"),
            ToolCallFormat::kMistral);
  EXPECT_EQ(ToolCallFormatFor("<|start_header_id|><|end_header_id|> <tool_call>"),
            ToolCallFormat::kHermes);
}

// Random outputs built from marker fragments, fed whole and in random pieces: the two agree,
// nothing crashes, and without a call nothing of the text is lost.
TEST(ToolCallParserTest, RandomOutputsStreamAsTheyParseWhole) {
  const std::vector<std::string> pieces = {"<tool_call>",
                                           "</tool_call>",
                                           "<tool",
                                           "[TOOL_CALLS]",
                                           "[ARGS]",
                                           "[TOOL",
                                           "<|python_tag|>",
                                           "{",
                                           "}",
                                           "[",
                                           "]",
                                           "\"name\": ",
                                           "\"get_time\"",
                                           "\"arguments\": ",
                                           "\"parameters\": ",
                                           "{}",
                                           "get_time",
                                           " ",
                                           "\n",
                                           ";",
                                           ",",
                                           "x",
                                           "\"",
                                           "\\",
                                           "{\"name\": \"get_time\", "};
  std::mt19937 rng(7);
  for (ToolCallFormat f :
       {ToolCallFormat::kHermes, ToolCallFormat::kLlama3, ToolCallFormat::kMistral}) {
    for (int round = 0; round < 3000; ++round) {
      std::string text;
      for (int n = 1 + static_cast<int>(rng() % 12); n > 0; --n)
        text += pieces[rng() % pieces.size()];
      const ToolCallEvents whole = ParseToolCalls(f, text, kTools);
      ToolCallParser p(f, kTools);
      ToolCallEvents streamed;
      for (size_t at = 0; at < text.size();) {
        const size_t len = std::min(text.size() - at, size_t{1} + rng() % 6);
        ToolCallEvents ev = p.Push(std::string_view(text).substr(at, len));
        streamed.content += ev.content;
        for (auto& c : ev.calls) streamed.calls.push_back(c);
        at += len;
      }
      ToolCallEvents tail = p.Finish();
      streamed.content += tail.content;
      for (auto& c : tail.calls) streamed.calls.push_back(c);
      ASSERT_EQ(whole.content, streamed.content) << ToolCallFormatName(f) << ": " << text;
      ASSERT_EQ(whole.calls.size(), streamed.calls.size()) << text;
      for (size_t i = 0; i < whole.calls.size(); ++i) {
        ASSERT_EQ(whole.calls[i].arguments, streamed.calls[i].arguments) << text;
        ASSERT_TRUE(nlohmann::json::parse(whole.calls[i].arguments).is_object()) << text;
      }
      if (whole.calls.empty()) {
        ASSERT_EQ(whole.content, text) << ToolCallFormatName(f);
      }
    }
  }
}

}  // namespace
}  // namespace sparrow::server
