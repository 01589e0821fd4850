#include "server/chat/chat_families.h"

#include "server/chat/py_json.h"

namespace sparrow::server {
namespace {

using json = nlohmann::json;

// The system prompt, if the first message is one, and the index of the first other message.
size_t SplitSystem(const std::vector<ChatMessage>& m, std::string* system) {
  if (!m.empty() && m[0].role == "system") {
    *system = m[0].content;
    return 1;
  }
  return 0;
}

std::string Quoted(const std::string& s) {
  return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

// Qwen 2.5 / Qwen 3 / Hermes 2 Pro wording.
constexpr std::string_view kHermesToolsIntro =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
constexpr std::string_view kHermesToolsOutro =
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>";

std::string HermesCall(const ChatToolCall& c) {
  return "<tool_call>\n{\"name\": " + Quoted(c.name) +
         ", \"arguments\": " + PyJson(ArgumentsJson(c)) + "}\n</tool_call>";
}

size_t LastUserIndex(const std::vector<ChatMessage>& m) {
  size_t last = 0;
  for (size_t i = 0; i < m.size(); ++i) {
    if (m[i].role == "user") last = i;
  }
  return last;
}

// Hermes-style tool use as plain system/user/assistant turns: the tools in the system prompt,
// calls as <tool_call> blocks, results (consecutive ones in one user turn) as <tool_response>.
// Reasoning of the turns after the last user message is kept as <think> when `keep_thinking`
// (Qwen 3 drops older thinking; families without it drop all).
std::vector<ChatMessage> HermesMessages(const std::vector<ChatMessage>& m, const ChatOptions& o,
                                        bool keep_thinking) {
  std::vector<ChatMessage> out;
  std::string system;
  const size_t start = SplitSystem(m, &system);
  if (!o.tools.empty()) {
    std::string block = system.empty() ? "" : system + "\n\n";
    block += kHermesToolsIntro;
    for (const ChatTool& t : o.tools) block.append("\n").append(PyJson(ToolJson(t)));
    block += kHermesToolsOutro;
    out.push_back({"system", block});
  } else if (start == 1) {
    out.push_back(m[0]);
  }
  const size_t last_user = LastUserIndex(m);
  for (size_t i = start; i < m.size(); ++i) {
    const ChatMessage& msg = m[i];
    if (msg.role == "tool") {
      std::string response = "<tool_response>\n" + msg.content + "\n</tool_response>";
      if (i > start && m[i - 1].role == "tool") {
        out.back().content += "\n" + response;
      } else {
        out.push_back({"user", response});
      }
      continue;
    }
    if (msg.role != "assistant") {
      out.push_back({msg.role, msg.content});
      continue;
    }
    std::string text;
    if (keep_thinking && i > last_user && !msg.reasoning_content.empty()) {
      text = "<think>\n" + msg.reasoning_content + "\n</think>\n\n";
    }
    text += msg.content;
    // Qwen 3: a newline between the content (if any) and each call.
    for (size_t k = 0; k < msg.tool_calls.size(); ++k) {
      if (k > 0 || !msg.content.empty()) text += "\n";
      text += HermesCall(msg.tool_calls[k]);
    }
    out.push_back({"assistant", text});
  }
  return out;
}

RenderedChat ChatMl(const std::vector<ChatMessage>& m, const ChatOptions& o) {
  ChatWriter w;
  for (const auto& msg : HermesMessages(m, o, /*keep_thinking=*/true)) {
    w.Markup("<|im_start|>" + msg.role + "\n");
    w.Text(msg.content);
    w.Markup("<|im_end|>\n");
  }
  if (o.add_generation_prompt) {
    w.Markup("<|im_start|>assistant\n");
    // Qwen 3's switch: an empty thought makes the model answer at once.
    if (o.enable_thinking == false) w.Markup("<think>\n\n</think>\n\n");
  }
  return w.Take();
}

RenderedChat Llama2(const std::vector<ChatMessage>& m) {
  ChatWriter w;
  std::string system;
  w.Markup("[INST] ");
  for (size_t i = SplitSystem(m, &system); i < m.size(); ++i) {
    if (m[i].role == "user") {
      if (!system.empty()) {
        w.Markup("<<SYS>>\n");
        w.Text(system);
        w.Markup("\n<</SYS>>\n\n");
        system.clear();
      }
      w.Text(m[i].content);
      w.Markup(" [/INST]");
    } else if (m[i].role == "assistant") {
      w.Markup(" ");
      w.Text(m[i].content);
      w.Markup(" </s><s>[INST] ");
    }
  }
  return w.Take();
}

// Llama 3.1's official wording for tools offered in the first user turn.
constexpr std::string_view kLlama3ToolsIntro =
    "Given the following functions, please respond with a JSON for a function call with its "
    "proper arguments that best answers the given prompt.\n\nRespond in the format {\"name\": "
    "function name, \"parameters\": dictionary of argument name and its value}.Do not use "
    "variables.\n\n";

void Llama3Turn(ChatWriter& w, std::string_view role, std::string_view content) {
  w.Markup("<|start_header_id|>");
  w.Markup(role);
  w.Markup("<|end_header_id|>\n\n");
  w.Text(content);
  w.Markup("<|eot_id|>");
}

RenderedChat Llama3(const std::vector<ChatMessage>& m, const ChatOptions& o) {
  ChatWriter w;
  size_t start = 0;
  size_t tools_user = m.size();  // the user turn that carries the tool list
  if (!o.tools.empty()) {
    std::string system;
    start = SplitSystem(m, &system);
    w.Markup("<|start_header_id|>system<|end_header_id|>\n\n");
    w.Markup("Environment: ipython\nCutting Knowledge Date: December 2023\n");
    w.Markup("Today Date: 26 Jul 2024\n\n");
    w.Text(system);
    w.Markup("<|eot_id|>");
    for (size_t i = start; i < m.size() && tools_user == m.size(); ++i) {
      if (m[i].role == "user") tools_user = i;
    }
    w.Markup("<|start_header_id|>user<|end_header_id|>\n\n");
    w.Markup(kLlama3ToolsIntro);
    for (const ChatTool& t : o.tools) {
      w.Text(PyJson(ToolJson(t), 4));
      w.Markup("\n\n");
    }
    if (tools_user < m.size()) w.Text(m[tools_user].content);
    w.Markup("<|eot_id|>");
  }
  for (size_t i = start; i < m.size(); ++i) {
    const ChatMessage& msg = m[i];
    if (i == tools_user) continue;
    if (msg.role == "tool") {
      Llama3Turn(w, "ipython", msg.content);
    } else if (msg.role == "assistant" && !msg.tool_calls.empty()) {
      std::string text = msg.content;
      for (const ChatToolCall& c : msg.tool_calls) {
        if (!text.empty()) text += "\n";
        text +=
            "{\"name\": " + Quoted(c.name) + ", \"parameters\": " + PyJson(ArgumentsJson(c)) + "}";
      }
      Llama3Turn(w, "assistant", text);
    } else {
      Llama3Turn(w, msg.role, msg.content);
    }
  }
  if (o.add_generation_prompt) w.Markup("<|start_header_id|>assistant<|end_header_id|>\n\n");
  return w.Take();
}

// Phi-3 and Zephyr differ only in the end-of-turn marker.
RenderedChat TaggedTurns(const std::vector<ChatMessage>& m, const ChatOptions& o,
                         std::string_view end) {
  ChatWriter w;
  for (const auto& msg : HermesMessages(m, o, false)) {
    w.Markup("<|" + msg.role + "|>\n");
    w.Text(msg.content);
    w.Markup(end);
  }
  if (o.add_generation_prompt) w.Markup("<|assistant|>\n");
  return w.Take();
}

// Gemma has no system role: the system prompt goes in front of the first user turn.
RenderedChat Gemma(const std::vector<ChatMessage>& all, const ChatOptions& o) {
  const std::vector<ChatMessage> m = HermesMessages(all, o, false);
  ChatWriter w;
  std::string system;
  for (size_t i = SplitSystem(m, &system); i < m.size(); ++i) {
    w.Markup(std::string("<start_of_turn>") + (m[i].role == "assistant" ? "model" : m[i].role) +
             "\n");
    if (!system.empty() && m[i].role == "user") {
      w.Text(system);
      w.Markup("\n\n");
      system.clear();
    }
    w.Text(m[i].content);
    w.Markup("<end_of_turn>\n");
  }
  if (o.add_generation_prompt) w.Markup("<start_of_turn>model\n");
  return w.Take();
}

// Mistral instruct: the system prompt is folded into the first user turn; tools are listed
// before the last user turn (v0.3).
RenderedChat Mistral(const std::vector<ChatMessage>& m, const ChatOptions& o) {
  ChatWriter w;
  std::string system;
  const size_t last_user = LastUserIndex(m);
  for (size_t i = SplitSystem(m, &system); i < m.size(); ++i) {
    const ChatMessage& msg = m[i];
    if (msg.role == "user") {
      if (!o.tools.empty() && i == last_user) {
        nlohmann::ordered_json list = nlohmann::ordered_json::array();
        for (const ChatTool& t : o.tools) list.push_back(ToolJson(t));
        w.Markup("[AVAILABLE_TOOLS] ");
        w.Text(PyJson(list));
        w.Markup("[/AVAILABLE_TOOLS]");
      }
      w.Markup("[INST] ");
      if (!system.empty()) {
        w.Text(system);
        w.Markup("\n\n");
        system.clear();
      }
      w.Text(msg.content);
      w.Markup(" [/INST]");
    } else if (msg.role == "assistant" && !msg.tool_calls.empty()) {
      std::string calls = "[";
      for (const ChatToolCall& c : msg.tool_calls) {
        if (calls.size() > 1) calls += ", ";
        calls += "{\"name\": " + Quoted(c.name) + ", \"arguments\": " + PyJson(ArgumentsJson(c)) +
                 ", \"id\": " + Quoted(c.id) + "}";
      }
      w.Markup("[TOOL_CALLS] ");
      w.Text(calls + "]");
      w.Markup("</s>");
    } else if (msg.role == "assistant") {
      w.Markup(" ");
      w.Text(msg.content);
      w.Markup("</s>");
    } else if (msg.role == "tool") {
      w.Markup("[TOOL_RESULTS] ");
      w.Text("{\"content\": " + msg.content + ", \"call_id\": " + Quoted(msg.tool_call_id) + "}");
      w.Markup("[/TOOL_RESULTS]");
    }
  }
  return w.Take();
}

}  // namespace

void ChatWriter::Text(std::string_view s) {
  if (s.empty()) return;
  // Adjacent client text is one range: the tokenizer sees it as one run of text.
  if (!out_.content.empty() &&
      out_.content.back().offset + out_.content.back().length == out_.text.size()) {
    out_.content.back().length += s.size();
  } else {
    out_.content.push_back({out_.text.size(), s.size()});
  }
  out_.text += s;
}

nlohmann::ordered_json ToolJson(const ChatTool& tool) {
  nlohmann::ordered_json f = {{"name", tool.name}};
  if (!tool.description.empty()) f["description"] = tool.description;
  f["parameters"] = tool.parameters;
  return {{"type", "function"}, {"function", f}};
}

nlohmann::ordered_json ArgumentsJson(const ChatToolCall& call) {
  auto args = nlohmann::ordered_json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
  return args.is_discarded() ? nlohmann::ordered_json(call.arguments) : args;
}

RenderedChat RenderChatFamily(ChatTemplate t, const std::vector<ChatMessage>& m,
                              const ChatOptions& o) {
  switch (t) {
    case ChatTemplate::kChatMl:
      return ChatMl(m, o);
    case ChatTemplate::kLlama2:
      return Llama2(HermesMessages(m, o, false));
    case ChatTemplate::kLlama3:
      return Llama3(m, o);
    case ChatTemplate::kPhi3:
      return TaggedTurns(m, o, "<|end|>\n");
    case ChatTemplate::kGemma:
      return Gemma(m, o);
    case ChatTemplate::kMistral:
      return Mistral(m, o);
    case ChatTemplate::kZephyr:
      return TaggedTurns(m, o, "<|endoftext|>\n");
  }
  return ChatMl(m, o);
}

}  // namespace sparrow::server
