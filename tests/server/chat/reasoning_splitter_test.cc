#include "server/chat/reasoning_splitter.h"

#include <gtest/gtest.h>

#include <random>

#include "server/chat/chat_output.h"

namespace sparrow::server {
namespace {

ReasoningParts ByteByByte(std::string_view text, bool in_thinking) {
  ReasoningSplitter s(in_thinking);
  ReasoningParts all;
  for (char c : text) {
    ReasoningParts p = s.Push(std::string_view(&c, 1));
    all.reasoning += p.reasoning;
    all.content += p.content;
  }
  ReasoningParts tail = s.Finish();
  all.reasoning += tail.reasoning;
  all.content += tail.content;
  return all;
}

void Expect(std::string_view text, bool in_thinking, const std::string& reasoning,
            const std::string& content) {
  for (const ReasoningParts& p :
       {SplitReasoning(text, in_thinking), ByteByByte(text, in_thinking)}) {
    EXPECT_EQ(p.reasoning, reasoning) << text;
    EXPECT_EQ(p.content, content) << text;
  }
}

TEST(ReasoningSplitterTest, SplitsThinkingFromTheAnswer) {
  Expect("<think>\nLet me think.\n</think>\n\nThe answer is 4.", false, "Let me think.",
         "The answer is 4.");
  Expect("<think></think>Hi", false, "", "Hi");
}

TEST(ReasoningSplitterTest, NoThinkingLeavesTextAlone) {
  Expect("  Hello <think> is a tag", false, "", "  Hello <think> is a tag");
  Expect("<thin", false, "", "<thin");
  Expect("", false, "", "");
}

TEST(ReasoningSplitterTest, PromptThatOpenedThinking) {
  Expect("\nhmm\n</think>\n\nYes.", true, "hmm", "Yes.");
  Expect("still thinking when cut off  ", true, "still thinking when cut off", "");
}

TEST(ReasoningSplitterTest, HoldsBackAPartialCloseTag) {
  ReasoningSplitter s(false);
  EXPECT_EQ(s.Push("<think>a </th").reasoning, "a");
  ReasoningParts p = s.Push("ink>b");
  EXPECT_EQ(p.reasoning, "");
  EXPECT_EQ(p.content, "b");
}

// Random outputs fed whole and in random pieces split alike.
TEST(ReasoningSplitterTest, RandomOutputsStreamAsTheySplitWhole) {
  const std::vector<std::string> pieces = {"<think>", "</think>", "<th", "</th", "ink>",
                                           " ",       "\n",       "a",   "bc"};
  std::mt19937 rng(11);
  for (bool in_thinking : {false, true}) {
    for (int round = 0; round < 3000; ++round) {
      std::string text;
      for (int n = 1 + static_cast<int>(rng() % 10); n > 0; --n) {
        text += pieces[rng() % pieces.size()];
      }
      const ReasoningParts whole = SplitReasoning(text, in_thinking);
      ReasoningSplitter s(in_thinking);
      ReasoningParts streamed;
      for (size_t at = 0; at < text.size();) {
        const size_t len = std::min(text.size() - at, size_t{1} + rng() % 5);
        ReasoningParts p = s.Push(std::string_view(text).substr(at, len));
        streamed.reasoning += p.reasoning;
        streamed.content += p.content;
        at += len;
      }
      ReasoningParts tail = s.Finish();
      streamed.reasoning += tail.reasoning;
      streamed.content += tail.content;
      ASSERT_EQ(whole.reasoning, streamed.reasoning) << text;
      ASSERT_EQ(whole.content, streamed.content) << text;
    }
  }
}

TEST(ReasoningSplitterTest, Names) {
  ReasoningFormat f;
  ASSERT_TRUE(ReasoningFormatFromName("none", &f));
  EXPECT_EQ(f, ReasoningFormat::kNone);
  ASSERT_TRUE(ReasoningFormatFromName("auto", &f));
  EXPECT_EQ(f, ReasoningFormat::kDeepSeek);
  EXPECT_FALSE(ReasoningFormatFromName("deepseek-legacy", &f));
}

TEST(ChatOutputParserTest, ReasoningThenToolCalls) {
  ChatOutputOptions o;
  o.split_reasoning = true;
  o.tool_format = ToolCallFormat::kHermes;
  o.tool_names = {"get_time"};
  ChatOutputParser p(o);
  std::string reasoning, content;
  std::vector<ChatToolCall> calls;
  const std::string text =
      "<think>I need the time.</think>\n\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": "
      "{}}\n</tool_call>";
  for (char c : text) {
    ChatDelta d = p.Push(std::string_view(&c, 1));
    reasoning += d.reasoning;
    content += d.content;
    for (auto& call : d.tool_calls) calls.push_back(call);
  }
  ChatDelta d = p.Finish();
  content += d.content;
  EXPECT_EQ(reasoning, "I need the time.");
  EXPECT_EQ(content, "");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(p.calls(), 1);
}

TEST(ChatOutputParserTest, PrefixFromThePromptStartsTheCall) {
  for (ToolCallFormat f :
       {ToolCallFormat::kHermes, ToolCallFormat::kLlama3, ToolCallFormat::kMistral}) {
    ChatOutputOptions o;
    o.split_reasoning = true;
    o.tool_format = f;
    o.tool_names = {"get_time"};
    o.prefix = ToolCallOpening(f, "get_time");
    ChatOutputParser p(o);
    const char* rest = f == ToolCallFormat::kHermes    ? "{\"tz\": \"UTC\"}}\n</tool_call>"
                       : f == ToolCallFormat::kMistral ? "{\"tz\": \"UTC\"}}]"
                                                       : "{\"tz\": \"UTC\"}}";
    ChatDelta d = p.Push(rest);
    ChatDelta end = p.Finish();
    d.tool_calls.insert(d.tool_calls.end(), end.tool_calls.begin(), end.tool_calls.end());
    ASSERT_EQ(d.tool_calls.size(), 1u) << ToolCallFormatName(f);
    EXPECT_EQ(d.tool_calls[0].name, "get_time");
    EXPECT_EQ(d.tool_calls[0].arguments, R"({"tz":"UTC"})");
    EXPECT_EQ(d.content + end.content, "");
  }
}

TEST(ChatOutputParserTest, InlineReasoningAndNoTools) {
  ChatOutputParser p(ChatOutputOptions{});
  ChatDelta d = p.Push("<think>x</think>y");
  EXPECT_EQ(d.content, "<think>x</think>y");
  EXPECT_TRUE(p.Finish().empty());
}

}  // namespace
}  // namespace sparrow::server
