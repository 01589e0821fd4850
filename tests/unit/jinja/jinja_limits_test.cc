// The limits of one render (RenderLimits): bytes held at once, steps of work, output size, items.
// Each test is a template that, without its limit, would take memory or time out of proportion
// to its text; the limits are set small so that the tests are quick.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/jinja/interpreter.h"
#include "engine/jinja/jinja_template.h"
#include "engine/jinja/lexer.h"
#include "engine/jinja/parser.h"

namespace sparrow::jinja {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

struct Rendered {
  Result<std::string> text;
  size_t peak_bytes;
};

Rendered RenderWith(const std::string& source, const RenderLimits& limits) {
  Result<std::vector<Token>> tokens = Lex(source, {});
  EXPECT_TRUE(tokens.ok()) << tokens.status().ToString();
  Result<Body> body = Parse(std::move(tokens).value());
  EXPECT_TRUE(body.ok()) << body.status().ToString();
  Interpreter in(limits);
  Result<std::string> text = in.Render(*body, Dict{});
  return {std::move(text), in.peak_bytes()};
}

void ExpectLimit(const std::string& source, const RenderLimits& limits, const std::string& limit) {
  Rendered r = RenderWith(source, limits);
  ASSERT_FALSE(r.text.ok()) << source;
  EXPECT_EQ(r.text.status().code(), StatusCode::kResourceExhausted) << source;
  EXPECT_NE(r.text.status().message().find("(the " + limit + ")"), std::string::npos)
      << source << ": " << r.text.status().message();
  EXPECT_EQ(r.text.status().message().rfind("chat template line ", 0), 0)
      << r.text.status().message();
  EXPECT_LE(r.peak_bytes, limits.max_bytes) << source;
}

RenderLimits Small() {
  RenderLimits l;
  l.max_bytes = 4 * kMiB;
  l.max_output_bytes = 1 * kMiB;
  return l;
}

TEST(JinjaLimitsTest, TheTemplateBombOfIssue41IsRefusedBeforeItIsBuilt) {
  // 60 MB of 'x', then a million references to it: 19 GiB of copies before strings were shared
  // and counted.
  const std::string bomb =
      "{% set s = 'x' * 60000000 %}{% set l = [s] * 1000000 %}{{ l | length }}";
  Result<Template> t = Template::Parse(bomb);
  ASSERT_TRUE(t.ok());
  Result<std::string> text = t->Render(nlohmann::json::object());
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(text.status().message().find("(the output limit)"), std::string::npos)
      << text.status().message();
  // With the one-string cap out of the way the sum of what it holds stops it.
  RenderLimits wide;
  wide.max_output_bytes = 128 * kMiB;
  ExpectLimit(bomb, wide, "byte limit");
  // A list of a million references to one string is 1M slots, not 1M copies.
  Rendered shared =
      RenderWith("{% set s = 'x' * 100000 %}{% set l = [s] * 50000 %}{{ l|length }}", Small());
  ASSERT_TRUE(shared.text.ok()) << shared.text.status().ToString();
  EXPECT_EQ(*shared.text, "50000");
}

TEST(JinjaLimitsTest, BytesAreSummedOverEveryValueHeld) {
  // Each string is under the one-string cap; together they are over the byte limit.
  std::string src = "{% set ns = namespace() %}";
  for (int i = 0; i < 8; ++i) {
    src += "{% set ns.v" + std::to_string(i) + " = '" + std::string(1, char('a' + i)) +
           "' * 700000 %}";
  }
  ExpectLimit(src, Small(), "byte limit");
  ExpectLimit("{% set a = [0] * 50000 %}{% set b = [1] * 50000 %}{% set c = [2] * 50000 %}",
              Small(), "byte limit");
  // Nested loops each hold a copy of the list they walk.
  ExpectLimit(
      "{% set l = [0] * 40000 %}{% for a in l %}{% for b in l %}{% for c in l %}"
      "{% endfor %}{% endfor %}{% endfor %}",
      Small(), "byte limit");
}

TEST(JinjaLimitsTest, BytesAreGivenBackWhenAValueGoes) {
  // 100 strings of 500 kB built one after the other: never more than one or two held at once.
  Rendered r = RenderWith(
      "{% for i in range(100) %}{% set t = 'x' * 500000 %}{% endfor %}{{ 'done' }}", Small());
  ASSERT_TRUE(r.text.ok()) << r.text.status().ToString();
  EXPECT_EQ(*r.text, "done");
  EXPECT_LT(r.peak_bytes, 2 * kMiB);
}

TEST(JinjaLimitsTest, BuildersStopBeforeTheyOutgrowTheBudget) {
  const char* bombs[] = {
      // One string shared 100 times, written out by repr, tojson, join, % and format.
      "{% set s = 'x' * 100000 %}{{ [s] * 100 }}",
      "{% set s = 'x' * 100000 %}{{ ([s] * 100)|tojson }}",
      "{% set s = 'x' * 100000 %}{{ ([s] * 100)|join(s) }}",
      "{% set s = 'x' * 100000 %}{{ ('%s' * 100) % ((s,) * 100) }}",
      "{% set s = 'x' * 100000 %}{{ ('{0}' * 100).format(s) }}",
      // Replacements that grow a short string a thousandfold.
      "{{ ('x' * 1000)|replace('x', 'y' * 10000) }}",
      "{{ ('x' * 1000).replace('', 'y' * 10000) }}",
      "{% set s = 'x' * 100000 %}{{ ('a\n' * 100)|indent(s) }}",
      // Output captured by macros calling macros.
      "{% set s = 'x' * 300000 %}{% macro f(n) %}{{ s }}{% if n > 0 %}{{ f(n - 1) }}{% endif %}"
      "{% endmacro %}{{ f(40) }}",
  };
  for (const char* src : bombs) {
    Rendered r = RenderWith(src, Small());
    ASSERT_FALSE(r.text.ok()) << src;
    EXPECT_EQ(r.text.status().code(), StatusCode::kResourceExhausted) << src;
    EXPECT_LE(r.peak_bytes, Small().max_bytes) << src;
  }
}

TEST(JinjaLimitsTest, OutputIsCapped) {
  ExpectLimit("{% for i in range(2000) %}{{ 'x' * 1000 }}{% endfor %}", Small(), "output limit");
  ExpectLimit("{{ 'x' * 2000000 }}", Small(), "output limit");
}

TEST(JinjaLimitsTest, BytesBuiltOrScannedCountAsWork) {
  RenderLimits l;
  l.max_steps = 100000;
  // Each test of `in` reads a megabyte: 15625 steps, not one.
  ExpectLimit(
      "{% set s = 'x' * 1000000 %}{% for i in range(100) %}{% if 'y' in s %}{% endif %}"
      "{% endfor %}",
      l, "step limit");
  // Building and dropping a megabyte a hundred times.
  ExpectLimit("{% for i in range(100) %}{% set t = 'x' * 1000000 %}{% endfor %}", l, "step limit");
  // Sorting counts its comparisons.
  ExpectLimit(
      "{% set l = range(100000)|list %}{% for i in range(20) %}{% set m = l|sort %}"
      "{% endfor %}",
      RenderLimits{.max_steps = 1000000}, "step limit");
}

TEST(JinjaLimitsTest, ItemLimitStillHolds) {
  ExpectLimit("{{ ('x' * 50000)|list|length }}", RenderLimits{.max_items = 10000}, "item limit");
  ExpectLimit("{% set l = [1] * 1000 %}{{ l * 100 }}", RenderLimits{.max_items = 10000},
              "item limit");
}

// A list nested 200,000 deep, built in loops within the default limits: its deletion, its
// printing, its comparison and its JSON each recursed once per level and overflowed the stack
// (a GGUF's template could kill sparrowd). Deletion is now iterative and the walks stop at
// NestingGuard::kMaxDepth.
TEST(JinjaLimitsTest, ValuesNestedPastAnyStackAreDeletedAndWalkedSafely) {
  const std::string build =
      "{% set ns = namespace(x=[]) %}{% for j in range(2) %}{% for i in range(100000) %}"
      "{% set ns.x = [ns.x] %}{% endfor %}{% endfor %}";
  // Length, printing and equality in one render: each render builds the 200000 levels again.
  Rendered r =
      RenderWith(build + "{{ ns.x | length }}|{{ ns.x }}|{{ ns.x == ns.x }}", RenderLimits{});
  ASSERT_TRUE(r.text.ok()) << r.text.status().ToString();
  EXPECT_TRUE(r.text->starts_with("1|")) << r.text->substr(0, 80);
  EXPECT_NE(r.text->find("..."), std::string::npos);
  EXPECT_TRUE(r.text->ends_with("|False"))
      << r.text->substr(r.text->size() - std::min<size_t>(80, r.text->size()));
  EXPECT_FALSE(RenderWith(build + "{{ [ns.x, ns.x] | sort }}", RenderLimits{}).text.ok());
  EXPECT_FALSE(RenderWith(build + "{{ ns.x | tojson }}", RenderLimits{}).text.ok());
}

}  // namespace
}  // namespace sparrow::jinja
