// The grammar of tool calls in each format: it matches what the model must write after the
// prompt's opening (or after the trigger), the chat parser reads those texts as calls with the
// right arguments, arguments outside the tool's schema are refused, and a strict tool with a
// schema outside the subset is refused naming the field.
#include "server/core/tool_call_grammar.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/grammar_dfa.h"
#include "server/chat/tool_call_parser.h"

namespace sparrow::server {
namespace {

using json = nlohmann::json;

std::vector<ChatTool> Tools() {
  std::vector<ChatTool> tools;
  tools.emplace_back("get_weather", "",
                     json::parse(R"({"type": "object", "properties": {"city": {"type": "string",
                         "maxLength": 10}}, "required": ["city"], "additionalProperties": false})"));
  tools.emplace_back("get_time", "", json::parse(R"({"type": "object", "properties": {"tz":
                         {"enum": ["utc", "cet"]}}, "required": ["tz"],
                         "additionalProperties": false})"));
  return tools;
}

bool Matches(const std::string& gbnf, const std::string& text) {
  auto g = grammar::ParseGbnf(gbnf);
  EXPECT_TRUE(g.ok()) << g.status().ToString() << "\n" << gbnf;
  if (!g.ok()) return false;
  grammar::GrammarDfa dfa(std::make_shared<const grammar::Grammar>(std::move(g).value()), {});
  grammar::GrammarDfa::StateId s = dfa.initial();
  for (char c : text) {
    s = dfa.Step(s, static_cast<uint8_t>(c));
    if (s == grammar::GrammarDfa::kDead) return false;
  }
  return dfa.Accepts(s);
}

struct Case {
  ToolCallFormat format;
  std::string named;
  bool lazy;
  std::string output;  // what follows the prompt (and, lazily, the free text and the trigger)
  std::string bad;     // the same with arguments outside the schema
};

class ToolCallGrammarTest : public ::testing::TestWithParam<Case> {};

TEST_P(ToolCallGrammarTest, MatchesTheFormatAndTheParserReadsIt) {
  const Case& c = GetParam();
  const std::vector<ChatTool> tools = Tools();
  ToolCallGrammarSpec spec;
  spec.format = c.format;
  spec.tools = &tools;
  spec.named = c.named;
  spec.lazy = c.lazy;
  auto g = MakeToolCallGrammar(spec);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->trigger.empty(), !c.lazy);
  EXPECT_TRUE(Matches(g->gbnf, c.output)) << g->gbnf;
  EXPECT_FALSE(Matches(g->gbnf, c.bad)) << g->gbnf;
  // The whole answer as the parser sees it: the prompt's opening (or the trigger) first.
  const std::string opening = c.lazy ? g->trigger : ToolCallOpening(c.format, c.named);
  std::vector<std::string> names = {"get_weather", "get_time"};
  ToolCallEvents ev = ParseToolCalls(c.format, opening + c.output, names);
  ASSERT_EQ(ev.calls.size(), 1u) << opening + c.output;
  EXPECT_EQ(json::parse(ev.calls[0].arguments), json({{"city", "Oslo"}}));
}

INSTANTIATE_TEST_SUITE_P(
    Formats, ToolCallGrammarTest,
    ::testing::Values(
        Case{ToolCallFormat::kHermes, "", false,
             "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
             "{\"name\": \"get_weather\", \"arguments\": {\"town\": \"Oslo\"}}\n</tool_call>"},
        Case{ToolCallFormat::kHermes, "get_weather", false, "{\"city\": \"Oslo\"}}\n</tool_call>",
             "{\"city\": \"Oslo is far away\"}}\n</tool_call>"},
        Case{ToolCallFormat::kHermes, "", true,
             "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
             "\n{\"name\": \"get_time\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"},
        Case{ToolCallFormat::kLlama3, "", false,
             "get_weather\", \"parameters\": {\"city\": \"Oslo\"}}",
             "get_weather\", \"parameters\": {\"city\": 7}}"},
        Case{ToolCallFormat::kLlama3, "get_weather", false, "{\"city\": \"Oslo\"}}", "{}}"},
        Case{ToolCallFormat::kMistral, "", false,
             "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}]",
             "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"x\": 1}}]"},
        Case{ToolCallFormat::kMistral, "get_weather", false, "{\"city\": \"Oslo\"}}]",
             "{\"city\": \"Oslo\"}]"}));

TEST(ToolCallGrammarRefusalTest, AStrictToolOutsideTheSubsetIsRefusedByName) {
  std::vector<ChatTool> tools = Tools();
  tools[1].parameters = json::parse(R"({"type": "object", "minProperties": 1})");
  tools[1].strict = true;
  ToolCallGrammarSpec spec;
  spec.tools = &tools;
  auto g = MakeToolCallGrammar(spec);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("tools[1].function.parameters"), std::string::npos)
      << g.status().ToString();
  EXPECT_NE(g.status().message().find("minProperties"), std::string::npos);
  // Not strict: any object instead.
  tools[1].strict = false;
  auto loose = MakeToolCallGrammar(spec);
  ASSERT_TRUE(loose.ok()) << loose.status().ToString();
  EXPECT_TRUE(Matches(loose->gbnf,
                      "{\"name\": \"get_time\", \"arguments\": {\"any\": [1]}}\n</tool_call>"));
}

}  // namespace
}  // namespace sparrow::server
