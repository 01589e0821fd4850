// Unit tests of the Jinja interpreter: each construct against the text Python's jinja2 renders
// for it (checked with jinja2 3.1 in transformers' environment: ImmutableSandboxedEnvironment,
// trim_blocks, lstrip_blocks, loopcontrols), and the errors for malformed templates, for
// constructs it lacks, raise_exception and runaway templates.
#include "engine/jinja/jinja_template.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/jinja/interpreter.h"
#include "engine/jinja/lexer.h"
#include "engine/jinja/parser.h"

namespace sparrow::jinja {
namespace {

const char* kContext = R"({
  "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}],
  "tool": {"name": "f", "items": [1, 2], "parameters": {"b": 1, "a": 2}},
  "n": 7, "s": "  Hello World  ", "sparrow_now": "2026-01-15T10:30:00"})";

struct Case {
  const char* name;
  const char* source;
  const char* expected;
};

const Case kCases[] = {
    {"Text", R"~(plain text {# comment #}stays)~", R"~(plain text stays)~"},
    {"WhitespaceControl",
     R"~(a  {%- if true -%}  b  {%- endif -%}  c
{{- ' d ' -}}
 e)~",
     R"~(abc d e)~"},
    {"TrimAndLstripBlocks",
     R"~(<ul>
  {% for x in [1, 2] %}
  <li>{{ x }}</li>
  {% endfor %}
</ul>
)~",
     R"~(<ul>
  <li>1</li>
  <li>2</li>
</ul>)~"},
    {"PlusDisablesLstrip",
     R"~(x
  {%+ if true %}y{% endif %}
)~",
     R"~(x
  y)~"},
    {"Literals",
     R"~({{ 'a\'b\n\t\u00e9\x41' }}|{{ "dq" 'adj' }}|{{ 42 }}|{{ 1.5 }}|{{ 1e3 }}|{{ 1_000 }}|{{ true }}{{ False }}{{ none }}{{ None }}|{{ [1, 'a', none, true] }}|{{ {'k': 1, 2: 'v'} }}|{{ (1,) }}|{{ (1, 2) }}|{{ () }})~",
     R"~(a'b
	éA|dqadj|42|1.5|1000.0|1000|TrueFalseNoneNone|[1, 'a', None, True]|{'k': 1, 2: 'v'}|(1,)|(1, 2)|())~"},
    {"FloatRepr",
     R"~({{ 0.1 }} {{ 1.0 }} {{ 1e16 }} {{ 1e-5 }} {{ 0.0001 }} {{ 123456789.125 }} {{ 2.5e-7 }} {{ 10 / 4 }} {{ 1 / 3 }})~",
     R"~(0.1 1.0 1e+16 1e-05 0.0001 123456789.125 2.5e-07 2.5 0.3333333333333333)~"},
    {"Arithmetic",
     R"~({{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 2 ** 3 ** 2 }} {{ 7 / 2 }} {{ 1.5 + 1 }} {{ -n }} {{ 'ab' * 3 }} {{ [1] * 2 }} {{ [1] + [2] }} {{ 'a' + 'b' }})~",
     R"~(7 9 3 -4 1 2 1024 64 3.5 2.5 -7 ababab [1, 1] [1, 2] ab)~"},
    {"Concat", R"~({{ 'a' ~ 1 ~ none ~ undefined_thing ~ [1] }})~", R"~(a1None[1])~"},
    {"Comparisons",
     R"~({{ 1 < 2 }} {{ 2 <= 1 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' != 'a' }} {{ none == none }} {{ 3 > 2 }} {{ 3 >= 3 }})~",
     R"~(True False True True True True False True True True)~"},
    {"InAndLogic",
     R"~({{ 'a' in 'cat' }} {{ 1 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }} {{ not true }} {{ 0 or 'x' }} {{ 1 and 'y' }} {{ '' and 'z' }} {{ not 1 == 2 }})~",
     R"~(True True True True False x y  True)~"},
    {"Tests",
     R"~({{ x is defined }} {{ n is defined }} {{ x is undefined }} {{ none is none }} {{ s is string }} {{ tool is mapping }} {{ tool is iterable }} {{ n is iterable }} {{ s is sequence }} {{ n is number }} {{ n is integer }} {{ 1.5 is float }} {{ true is boolean }} {{ true is true }} {{ 0 is false }} {{ n is odd }} {{ n is even }} {{ n is equalto 7 }} {{ n is eq(7) }} {{ n is sameas 7 }} {{ none is sameas none }} {{ 9 is divisibleby 3 }} {{ 'a' is in 'abc' }} {{ 'ab' is lower }} {{ range is callable }} {{ n is not none }} {{ n is gt 3 }} {{ n is le 3 }})~",
     R"~(False True True True True True True False True True True True True True False True False True True True True True True True True True True False)~"},
    {"InlineIf",
     R"~({{ 'y' if n > 3 else 'n' }}|{{ 'y' if n > 30 }}|{{ 'a' if false else 'b' if false else 'c' }})~",
     R"~(y||c)~"},
    {"Subscripts",
     R"~({{ messages[0]['role'] }} {{ messages[-1].content }} {{ s[2] }} {{ s[-3] }} {{ tool['name'] }} {{ tool.parameters.a }} {{ [1, 2, 3][1:] }} {{ [1, 2, 3][:-1] }} {{ [1, 2, 3][::-1] }} {{ 'héllo'[::-1] }} {{ 'abcdef'[1:5:2] }} {{ 'abc'[5:] }} {{ messages.0.role }})~",
     R"~(user Yo H d f 2 [2, 3] [1, 2] [3, 2, 1] olléh bd  user)~"},
    {"AttributeFallback",
     R"~({{ tool.name }}|{{ tool['items'] }}|{{ tool.items is callable }}|{{ tool.missing }}|{{ tool.missing is defined }}|{{ tool.get('name') }}|{{ tool.get('nope', 'd') }}|{{ tool.get('nope') }})~",
     R"~(f|[1, 2]|True||False|f|d|None)~"},
    {"ForLoop",
     R"~({% for m in messages %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.revindex0 }}/{{ loop.length }}/{{ loop.first }}/{{ loop.last }}:{{ m.role }};{% endfor %})~",
     R"~(1/0/2/1/2/True/False:user;2/1/1/0/2/False/True:assistant;)~"},
    {"ForElseAndFilter",
     R"~({% for x in [] %}{{ x }}{% else %}empty{% endfor %}|{% for x in range(6) if x is odd %}{{ x }}{{ loop.length }} {% endfor %})~",
     R"~(empty|13 33 53 )~"},
    {"ForUnpacking",
     R"~({% for k, v in tool.parameters.items() %}{{ k }}={{ v }} {% endfor %}|{% for k in tool.parameters %}{{ k }}{% endfor %}|{% for a, b in [[1, 2], (3, 4)] %}{{ a + b }}{% endfor %}|{% for c in 'hé' %}[{{ c }}]{% endfor %})~",
     R"~(b=1 a=2 |ba|37|[h][é])~"},
    {"LoopControls",
     R"~({% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x > 4 %}{% break %}{% endif %}{{ x }}{% endfor %})~",
     R"~(0134)~"},
    {"LoopNeighbours",
     R"~({% for x in ['a', 'b', 'c'] %}{{ loop.previtem is defined }}{{ loop.previtem }}-{{ x }}-{{ loop.nextitem }}{{ loop.cycle('o', 'e') }} {% endfor %})~",
     R"~(False-a-bo Truea-b-ce Trueb-c-o )~"},
    {"NestedLoops",
     R"~({% for a in [1, 2] %}{% for b in [3, 4] %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{{ loop.index }};{% endfor %})~",
     R"~(113 214 1;123 224 2;)~"},
    {"IfElifElse",
     R"~({% for x in [1, 2, 3] %}{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %} {% endfor %})~",
     R"~(one two many )~"},
    {"SetScoping",
     R"~({% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}{% if true %}{% set x = 3 %}{% endif %}{{ x }}{% set a, b = 4, 5 %}{{ a }}{{ b }})~",
     R"~(21345)~"},
    {"Namespace",
     R"~({% set ns = namespace(count=0, found=false) %}{% for m in messages %}{% set ns.count = ns.count + 1 %}{% if m.role == 'assistant' %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.count }} {{ ns.found }})~",
     R"~(2 True)~"},
    {"BlockSet",
     R"~({% set greeting %}Hello {{ messages[0].content }}{% endset %}[{{ greeting }}])~",
     R"~([Hello Hi])~"},
    {"Macro",
     R"~({% macro tag(name, cls='x', close=true) %}<{{ name }} class={{ cls }}>{% if close %}</{{ name }}>{% endif %}{% endmacro %}{{ tag('a') }}{{ tag('b', 'y') }}{{ tag('c', close=false) }}{{ tag(cls='z', name='d') }})~",
     R"~(<a class=x></a><b class=y></b><c class=x><d class=z></d>)~"},
    {"MacroRecursion",
     R"~({% macro walk(v) %}{% if v is mapping %}{% for k, x in v.items() %}{{ k }}:({{ walk(x) }}){% endfor %}{% else %}{{ v }}{% endif %}{% endmacro %}{{ walk(tool) }})~",
     R"~(name:(f)items:([1, 2])parameters:(b:(1)a:(2)))~"},
    {"CallBlock",
     R"~({% macro box(title) %}[{{ title }}: {{ caller() }}]{% endmacro %}{% call box('t') %}inside {{ n }}{% endcall %}{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}{% call(x) each([1, 2]) %}<{{ x }}>{% endcall %})~",
     R"~([t: inside 7]<1><2>)~"},
    {"FilterBlock",
     R"~({% filter upper %}shout {{ s | trim }}{% endfilter %}|{% filter trim | lower %}  MiXed  {% endfilter %})~",
     R"~(SHOUT HELLO WORLD|mixed)~"},
    {"StringFilters",
     R"~({{ s|trim }}|{{ s|upper }}|{{ s|lower }}|{{ 'hello wORLD-foo bar'|title }}|{{ 'hello WORLD'|capitalize }}|{{ s|length }}|{{ 'héllo'|count }}|{{ 'a-b-a'|replace('a', 'x') }}|{{ 'a-b-a'|replace('a', 'x', 1) }}|{{ 'xxhixx'|trim('x') }}|{{ '<a & b>'|e }}|{{ 'one two  three'|wordcount }}|{{ 42|string }}|{{ none|string }})~",
     R"~(Hello World|  HELLO WORLD  |  hello world  |Hello World-Foo Bar|Hello world|15|5|x-b-x|x-b-a|hi|&lt;a &amp; b&gt;|3|42|None)~"},
    {"DefaultFilter",
     R"~({{ x|default('d') }}|{{ ''|default('d') }}|{{ ''|default('d', true) }}|{{ none|d('n') }}|{{ n|default(0) }})~",
     R"~(d||d|None|7)~"},
    {"ListFilters",
     R"~({{ [3, 1, 2]|first }}{{ [3, 1, 2]|last }}|{{ [3, 1, 2]|sort }}|{{ ['b', 'A', 'c']|sort }}|{{ [3, 1, 2]|sort(reverse=true) }}|{{ [1, 2]|join(', ') }}|{{ messages|map(attribute='role')|join('/') }}|{{ ['a', 'B', 'A', 'b']|unique|list }}|{{ [1, 2, 3]|min }}{{ [1, 2, 3]|max }}|{{ [1, 2, 3]|sum }}|{{ [1, 2, 3, 4, 5]|batch(2)|list }}|{{ 'abc'|list }}|{{ [1, 2]|reverse|list }}|{{ 'abc'|reverse }}|{{ [1, 2, 3]|length }})~",
     R"~(32|[1, 2, 3]|['A', 'b', 'c']|[3, 2, 1]|1, 2|user/assistant|['a', 'B']|13|6|[[1, 2], [3, 4], [5]]|['a', 'b', 'c']|[2, 1]|cba|3)~"},
    {"SelectFilters",
     R"~({{ messages|selectattr('role', 'equalto', 'user')|map(attribute='content')|list }}|{{ messages|rejectattr('role', 'eq', 'user')|list|length }}|{{ [0, 1, 2, 3]|select('odd')|list }}|{{ [0, 1, '', 'a']|select|list }}|{{ [0, 1, 2]|reject('even')|list }}|{{ messages|selectattr('missing')|list }}|{{ [1, 2]|map('string')|join }})~",
     R"~(['Hi']|1|[1, 3]|[1, 'a']|[1]|[]|12)~"},
    {"DictFilters",
     R"~({{ tool.parameters|dictsort }}|{{ tool.parameters|dictsort(by='value', reverse=true) }}|{{ tool.parameters|items|list }}|{{ tool.parameters.keys()|list }}|{{ tool.parameters.values()|list }}|{{ tool.parameters|list }})~",
     R"~([('a', 2), ('b', 1)]|[('a', 2), ('b', 1)]|[('b', 1), ('a', 2)]|['b', 'a']|[1, 2]|['b', 'a'])~"},
    {"NumberFilters",
     R"~({{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(5) }} {{ 3.9|int }} {{ '2.5'|float }} {{ 'y'|float }} {{ -3|abs }} {{ 2.675|round(2) }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.1|round(0, 'ceil') }} {{ 7|round }})~",
     R"~(42 4 0 5 3 2.5 0.0 3 2.67 2.0 4.0 3.0 7)~"},
    {"ToJson",
     R"~({{ tool|tojson }}|{{ tool|tojson(indent=2) }}|{{ tool|tojson(sort_keys=true) }}|{{ tool|tojson(separators=(',', ':')) }}|{{ 'é"\n<'|tojson }}|{{ 'é😀'|tojson(ensure_ascii=true) }}|{{ [1.0, none, true]|tojson }}|{{ {}|tojson(indent=2) }}|{{ []|tojson }})~",
     R"~({"name": "f", "items": [1, 2], "parameters": {"b": 1, "a": 2}}|{
  "name": "f",
  "items": [
    1,
    2
  ],
  "parameters": {
    "b": 1,
    "a": 2
  }
}|{"items": [1, 2], "name": "f", "parameters": {"a": 2, "b": 1}}|{"name":"f","items":[1,2],"parameters":{"b":1,"a":2}}|"é\"\n<"|"\u00e9\ud83d\ude00"|[1.0, null, true]|{}|[])~"},
    {"Indent",
     R"~({{ 'a\nb\n\nc'|indent }}|{{ 'a\nb'|indent(2, true) }}|{{ 'a\n\nb'|indent('> ', blank=true) }})~",
     R"~(a
    b

    c|  a
  b|a
> 
> b)~"},
    {"StringMethods", R"~({{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ 'xxhixx'.strip('x') }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ s.startswith('  He') }}|{{ s.endswith(('x', '  ')) }}|{{ 'Hi'.upper() }}{{ 'Hi'.lower() }}|{{ 'aXa'.replace('a', 'b') }}|{{ 'hello'.find('l') }}|{{ 'hello wORLD'.title() }}|{{ '{} and {name}'.format(1, name='two') }}|{{ 'a\nb'.splitlines() }}|{{ ', '.join(['x', 'y']) }}|{{ 'banana'.count('a') }})~", R"~(Hello World|Hello World  |  Hello World|hi|['a', 'b', '', 'c']|['a', 'b']|['a', 'b c']|True|True|HIhi|bXb|2|Hello World|1 and two|['a', 'b']|x, y|3)~"},
    {"Globals",
     R"~({{ range(3)|list }} {{ range(1, 10, 4)|list }} {{ range(3, 0, -1)|list }} {{ dict(a=1, b='x') }} {{ namespace(a=1).a }} {{ strftime_now('%Y-%m-%d %A %B %d') }})~",
     R"~([0, 1, 2] [1, 5, 9] [3, 2, 1] {'a': 1, 'b': 'x'} 1 2026-01-15 Thursday January 15)~"},
    {"PythonRepr",
     R"~({{ messages }}|{{ {'q': "it's", 'e': 'tab\there', 'u': 'é'} }}|{{ [1.5, -0.0, none, false] }}|{{ ('a',) }}|{{ tool.parameters.items()|list }})~",
     R"~([{'role': 'user', 'content': 'Hi'}, {'role': 'assistant', 'content': 'Yo'}]|{'q': "it's", 'e': 'tab\there', 'u': 'é'}|[1.5, -0.0, None, False]|('a',)|[('b', 1), ('a', 2)])~"},
    {"Markup",
     R"~({{ '<b>'|safe + '<i>' }}|{{ '<i>' + '<b>'|safe }}|{{ ('<b>'|safe) ~ '<i>' }}|{{ '<x>'|e|e }})~",
     R"~(<b>&lt;i&gt;|&lt;i&gt;<b>|<b><i>|&lt;x&gt;)~"},
    {"UndefinedRendersEmpty",
     R"~([{{ nothing }}][{{ nothing|length }}][{% for x in nothing %}x{% endfor %}][{{ nothing|default('d') }}][{{ nothing is defined }}])~",
     R"~([][0][][d][False])~"},
    {"TrailingNewlineDropped",
     R"~(line
)~",
     R"~(line)~"},
    {"LoopIterationScope",
     R"~({% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}|{% for i in [1, 2] %}{% if i == 2 %}[{{ y }}]{% endif %}{% set y = i %}{% endfor %})~",
     R"~(12121|[])~"},
    {"ChainedComparison", R"~({{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 < n <= 7 }})~",
     R"~(True False True)~"},
    {"MacroVarargs",
     R"~({% macro f(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ f(1, 2, 3, k=4) }})~",
     R"~(1(2, 3){'k': 4})~"},
    {"FullCaseMapping", R"~({{ 'straße'|upper }} {{ 'İ'|lower|length }})~", R"~(STRASSE 2)~"},
    {"UndefinedInsideRepr", R"~({{ messages|map(attribute='nope')|list }})~",
     R"~([Undefined, Undefined])~"},
    {"RawBlock",
     R"~(a {% raw %}{{ not evaluated }} {% if %}{% endraw %} b
  {% raw -%}
  x  {%- endraw %}
)~",
     R"~(a {{ not evaluated }} {% if %} b
x)~"},
    {"PercentFormatting",
     R"~({{ '%s and %d%%' % ('a', 50) }}|{{ '%5s|%-5s|' % ('ab', 'cd') }}|{{ '%.2f' % 3.14159 }}|{{ '%(x)s-%(y)d' % {'x': 'X', 'y': 2} }}|{{ '%r' % 'q' }}|{{ '%s' % [1, 2] }}|{{ '%s-%s'|format(1, 2) }}|{{ '%(a)s'|format(a=3) }})~",
     R"~(a and 50%|   ab|cd   ||3.14|X-2|'q'|[1, 2]|1-2|3)~"},
    {"Generation",
     R"~({% for m in messages %}{% if m.role == 'assistant' %}{% generation %}{{ m.content }}{% endgeneration %}{% endif %}{% endfor %})~",
     R"~(Yo)~"},
};

Result<std::string> RenderText(std::string_view source, std::string_view context = kContext) {
  SPARROW_ASSIGN_OR_RETURN(Template t, Template::Parse(source));
  return t.Render(nlohmann::ordered_json::parse(context));
}

TEST(JinjaTemplateTest, RendersEachConstructLikeJinja2) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    Result<std::string> got = RenderText(c.source);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, c.expected);
  }
}

TEST(JinjaTemplateTest, OneTemplateRendersOnManyThreads) {
  Result<Template> t = Template::Parse(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
      "{{ m.role }}:{{ m.content }};{% endfor %}{{ ns.n }}");
  ASSERT_TRUE(t.ok());
  const auto context = nlohmann::ordered_json::parse(kContext);
  std::vector<std::string> outputs(4);
  std::vector<std::thread> threads;
  for (auto& out : outputs) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        Result<std::string> r = t->Render(context);
        out = r.ok() ? *r : r.status().ToString();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& out : outputs) EXPECT_EQ(out, "user:Hi;assistant:Yo;2");
}

TEST(JinjaTemplateTest, SortedJsonContextRendersToo) {
  Result<Template> t = Template::Parse("{{ d|tojson }}");
  ASSERT_TRUE(t.ok());
  // nlohmann::json keeps its keys sorted; the ordered overload keeps the caller's order.
  Result<std::string> sorted = t->Render(nlohmann::json::parse(R"({"d": {"b": 1, "a": 2}})"));
  ASSERT_TRUE(sorted.ok());
  EXPECT_EQ(*sorted, R"({"a": 2, "b": 1})");
  Result<std::string> ordered =
      t->Render(nlohmann::ordered_json::parse(R"({"d": {"b": 1, "a": 2}})"));
  ASSERT_TRUE(ordered.ok());
  EXPECT_EQ(*ordered, R"({"b": 1, "a": 2})");
}

TEST(JinjaTemplateTest, JinjaDefaultsWithoutTrimAndLstrip) {
  Result<Template> t = Template::Parse("a\n  {% if true %}\nb\n  {% endif %}\n",
                                       ParseOptions{.trim_blocks = false, .lstrip_blocks = false});
  ASSERT_TRUE(t.ok());
  Result<std::string> got = t->Render(nlohmann::json::object());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, "a\n  \nb\n  ");
}

void ExpectError(std::string_view source, StatusCode code, std::string_view message) {
  SCOPED_TRACE(source);
  Result<std::string> got = RenderText(source);
  ASSERT_FALSE(got.ok()) << "rendered: " << *got;
  EXPECT_EQ(got.status().code(), code) << got.status().ToString();
  EXPECT_NE(got.status().message().find(message), std::string::npos) << got.status().ToString();
}

TEST(JinjaTemplateTest, UnsupportedConstructsAreNamed) {
  ExpectError("a\n{{ x | foo }}", StatusCode::kUnsupported,
              "chat template line 2:8: filter 'foo' is not supported");
  ExpectError("{{ x is prime }}", StatusCode::kUnsupported, "test 'prime' is not supported");
  ExpectError("{% include 'other.jinja' %}", StatusCode::kUnsupported,
              "line 1:4: tag 'include' is not supported");
  ExpectError("{% for x in y recursive %}{% endfor %}", StatusCode::kUnsupported,
              "recursive for loops are not supported");
  ExpectError("{{ f(*args) }}", StatusCode::kUnsupported, "*args and **kwargs are not supported");
  ExpectError("{{ '%x' % n }}", StatusCode::kUnsupported, "the %x conversion is not supported");
}

TEST(JinjaTemplateTest, UnknownFilterInAConditionalBranchFailsOnlyWhenItRuns) {
  // jinja2 defers these to run time (its "soft" frames), and templates rely on it.
  Result<std::string> skipped = RenderText("{% if false %}{{ x | from_json }}{% endif %}ok");
  ASSERT_TRUE(skipped.ok()) << skipped.status().ToString();
  EXPECT_EQ(*skipped, "ok");
  ExpectError("{% if true %}{{ x | from_json }}{% endif %}", StatusCode::kUnsupported,
              "chat template line 1:21: filter 'from_json' is not supported");
}

TEST(JinjaTemplateTest, MalformedTemplatesAreInvalid) {
  ExpectError("{% if x %}never closed", StatusCode::kInvalidArgument,
              "line 1:23: unexpected end of template, expected 'elif' or 'else' or 'endif'");
  ExpectError("{{ x ", StatusCode::kInvalidArgument, "line 1:1: the expression is not closed");
  ExpectError("ok\n{% endfor %}", StatusCode::kInvalidArgument,
              "line 2:4: unexpected 'endfor' without a matching opening tag");
  ExpectError("{{ 1 + }}", StatusCode::kInvalidArgument, "line 1:8: expected an expression");
  ExpectError("{{ 'open }}", StatusCode::kInvalidArgument, "the string is not closed");
  ExpectError("{# open", StatusCode::kInvalidArgument, "the comment is not closed");
  ExpectError("{{ [1, 2 }}", StatusCode::kInvalidArgument, "unexpected '}'");
  ExpectError("{% break %}", StatusCode::kInvalidArgument, "'break' outside a for loop");
  ExpectError("{% macro m(a=1, b) %}{% endmacro %}", StatusCode::kInvalidArgument,
              "a parameter without a default follows one with a default");
  ExpectError("{{ x @ y }}", StatusCode::kInvalidArgument, "unexpected character '@'");
}

TEST(JinjaTemplateTest, RaiseExceptionNamesMessageAndLine) {
  ExpectError("line one\n  {{ raise_exception('Roles must alternate') }}",
              StatusCode::kInvalidArgument,
              "chat template line 2:6: raise_exception: Roles must alternate");
}

TEST(JinjaTemplateTest, RuntimeErrorsFollowJinja2) {
  ExpectError("{{ missing.attr }}", StatusCode::kInvalidArgument, "'missing' is undefined");
  ExpectError("{{ tool.nope.deeper }}", StatusCode::kInvalidArgument,
              "'dict object' has no attribute 'nope'");
  ExpectError("{{ none.split('x') }}", StatusCode::kInvalidArgument,
              "'None' has no attribute 'split'");
  ExpectError("{% for x in none %}{% endfor %}", StatusCode::kInvalidArgument,
              "'NoneType' object is not iterable");
  ExpectError("{{ 'a' + 1 }}", StatusCode::kInvalidArgument,
              "can only concatenate str (not \"int\") to str");
  ExpectError("{{ 1 / 0 }}", StatusCode::kInvalidArgument, "division by zero");
  ExpectError("{{ [1]|map('string')|tojson }}", StatusCode::kInvalidArgument,
              "Object of type generator is not JSON serializable");
  // transformers' sandbox refuses the methods that modify a list or dict.
  ExpectError("{% set l = [] %}{{ l.append(1) }}", StatusCode::kInvalidArgument,
              "access to attribute 'append' of 'list' object is unsafe.");
  ExpectError("{{ tool.pop('name') }}", StatusCode::kInvalidArgument,
              "access to attribute 'pop' of 'dict' object is unsafe.");
  ExpectError("{{ none|length }}", StatusCode::kInvalidArgument,
              "object of type 'NoneType' has no len()");
  ExpectError("{{ range(1000000)|length }}", StatusCode::kResourceExhausted, "Range too big");
}

TEST(JinjaTemplateTest, RunawayTemplatesStop) {
  ExpectError("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", StatusCode::kResourceExhausted,
              "macro calls nest deeper than 64");
  ExpectError("{{ 'x' * 100000000 }}", StatusCode::kResourceExhausted, "bytes");
  ExpectError("{{ ('x' * 5000000)|list|length }}", StatusCode::kResourceExhausted, "items");
  ExpectError("{% set l = [1] * 1000 %}{{ l * 10000 }}", StatusCode::kResourceExhausted, "items");
  ExpectError("{{ 3 ** 100 }}", StatusCode::kOutOfRange, "integer overflow");
  Result<std::string> empty = RenderText("{{ '' * 1000000000000 }}{{ (-1) ** 1001 }}");
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_EQ(*empty, "-1");
  ExpectError("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}",
              StatusCode::kInvalidArgument, "nests too deeply");
  std::string nested;
  for (int i = 0; i < 300; ++i) nested += "{% if true %}";
  ExpectError(nested, StatusCode::kInvalidArgument, "nests too deeply");
  std::string json = std::string(1000, '[') + std::string(1000, ']');
  Result<Template> t = Template::Parse("x");
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->Render(nlohmann::json::parse("{\"a\": " + json + "}")).ok());
}

TEST(JinjaTemplateTest, WorkLimitStopsLongLoops) {
  Result<std::vector<Token>> tokens =
      Lex("{% for i in range(1000) %}{% for j in range(1000) %}.{% endfor %}{% endfor %}", {});
  ASSERT_TRUE(tokens.ok());
  Result<Body> body = Parse(std::move(tokens).value());
  ASSERT_TRUE(body.ok());
  Interpreter in(RenderLimits{.max_steps = 100000});
  Result<std::string> got = in.Render(*body, Dict{});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kResourceExhausted);
}

TEST(JinjaTemplateTest, RandomTemplatesNeverCrash) {
  // Fragments of real template syntax glued at random: every result must be a value or a
  // Status, whatever the nesting.
  const char* pieces[] = {
      "{{",     "}}",         "{%",       "%}",      "{#",       "#}",       "{%-",        "-%}",
      " if ",   " for ",      " in ",     " endif ", " endfor ", " else ",   " set ",      " = ",
      "x",      "m",          "messages", ".",       "[",        "]",        "(",          ")",
      "{",      "}",          "|",        "tojson",  "length",   " is ",     "defined",    "'s'",
      "1",      ",",          ":",        "~",       "+",        "-",        "*",          " and ",
      " not ",  "loop.index", "\n",       " ",       "macro ",   "endmacro", "namespace(", "ns.x",
      "range(", "items()",    "[::-1]",   "\"",      "\\"};
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; ++i) {
    std::string src;
    int n = static_cast<int>(rng() % 40);
    for (int j = 0; j < n; ++j) src += pieces[rng() % std::size(pieces)];
    Result<Template> t = Template::Parse(src);
    if (t.ok()) (void)t->Render(nlohmann::ordered_json::parse(kContext));
  }
}

}  // namespace
}  // namespace sparrow::jinja
