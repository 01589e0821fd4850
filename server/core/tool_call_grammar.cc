#include "server/core/tool_call_grammar.h"

#include "engine/grammar/gbnf_compose.h"
#include "engine/grammar/json_schema_grammar.h"

namespace sparrow::server {
namespace {

// A GBNF literal of `text` (names are [a-zA-Z0-9_-], but the quotes and backslashes of the
// JSON around them need escaping).
std::string Literal(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// The rule of tool i's arguments ("t3-root"); appended piece by piece, since GCC 12 misreports
// `"t" + std::to_string(i) + ...` as -Wrestrict.
std::string ArgsRule(size_t i) {
  std::string r = "t";
  r += std::to_string(i);
  r += "-root";
  return r;
}

// Tool i may be called: every tool, or only the one tool_choice names.
bool Offered(const ToolCallGrammarSpec& spec, size_t i) {
  return spec.named.empty() || (*spec.tools)[i].name == spec.named;
}

// Each offered tool's arguments as the rule "tI-root", its rules prefixed so that they stay apart.
Result<std::string> ArgumentRules(const ToolCallGrammarSpec& spec) {
  std::string rules;
  grammar::JsonSchemaOptions options;
  options.max_depth = spec.max_schema_depth;
  for (size_t i = 0; i < spec.tools->size(); ++i) {
    const ChatTool& t = (*spec.tools)[i];
    if (!Offered(spec, i)) continue;
    Result<std::string> g = grammar::JsonSchemaToGbnf(t.parameters.dump(), options);
    if (!g.ok()) {
      const std::string field = "tools[" + std::to_string(i) + "].function.parameters";
      if (t.strict) return InvalidArgument("'" + field + "': " + g.status().message());
      g = grammar::AnyJsonObjectGbnf();  // not strict: any object rather than a refusal
    }
    std::string prefix = ArgsRule(i);
    prefix.resize(prefix.size() - 4);  // "t3-"
    rules += grammar::PrefixGbnfRules(*g, prefix);
  }
  return rules;
}

// One call of any offered tool: {"name": "NAME", "<key>": ARGS}.
std::string AnyCall(const ToolCallGrammarSpec& spec, const std::string& key) {
  std::string alts;
  for (size_t i = 0; i < spec.tools->size(); ++i) {
    if (!Offered(spec, i)) continue;
    if (!alts.empty()) alts += " | ";
    alts += Literal("{\"name\": \"" + (*spec.tools)[i].name + "\", \"" + key + "\": ") + " " +
            ArgsRule(i);
  }
  return "call ::= (" + alts + ") \"}\"\n";
}

std::string NamedArgs(const ToolCallGrammarSpec& spec) {
  for (size_t i = 0; i < spec.tools->size(); ++i) {
    if ((*spec.tools)[i].name == spec.named) return ArgsRule(i);
  }
  return "t0-root";
}

}  // namespace

Result<ToolCallGrammar> MakeToolCallGrammar(const ToolCallGrammarSpec& spec) {
  ToolCallGrammar out;
  SPARROW_ASSIGN_OR_RETURN(std::string rules, ArgumentRules(spec));
  const bool named = !spec.named.empty() && !spec.lazy;
  std::string root;
  switch (spec.format) {
    case ToolCallFormat::kNone:
      return InvalidArgument("this chat format has no tool calls");
    case ToolCallFormat::kHermes: {
      // <tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>, one after the other.
      const std::string close = Literal("\n</tool_call>");
      const std::string more =
          spec.parallel ? " (" + Literal("\n<tool_call>\n") + " call " + close + ")*" : "";
      if (named) {
        root = "root ::= " + NamedArgs(spec) + " \"}\" " + close + "\n";
      } else {
        root = "root ::= " + std::string(spec.lazy ? Literal("\n") + " " : "") + "call " + close +
               more + "\n" + AnyCall(spec, "arguments");
      }
      out.trigger = "<tool_call>";
      break;
    }
    case ToolCallFormat::kLlama3: {
      // {"name": ..., "parameters": ...}; the prompt's opening is `{"name": "` (one call).
      if (named) {
        root = "root ::= " + NamedArgs(spec) + " \"}\"\n";
      } else {
        std::string alts;
        for (size_t i = 0; i < spec.tools->size(); ++i) {
          if (!Offered(spec, i)) continue;
          if (!alts.empty()) alts += " | ";
          alts += Literal((*spec.tools)[i].name + "\", \"parameters\": ") + " " + ArgsRule(i);
        }
        root = "root ::= " + std::string(spec.lazy ? Literal("{\"name\": \"") + " " : "") + "(" +
               alts + ") \"}\"\n";
      }
      out.trigger = "<|python_tag|>";
      break;
    }
    case ToolCallFormat::kMistral: {
      // [TOOL_CALLS][{"name": ..., "arguments": ...}, ...]
      if (named) {
        root = "root ::= " + NamedArgs(spec) + " \"}]\"\n";
      } else {
        const std::string more = spec.parallel ? " (\", \" call)*" : "";
        root = "root ::= \"[\" call" + more + " \"]\"\n" + AnyCall(spec, "arguments");
      }
      out.trigger = "[TOOL_CALLS]";
      break;
    }
  }
  out.gbnf = root + rules;
  if (!spec.lazy) out.trigger.clear();
  return out;
}

}  // namespace sparrow::server
