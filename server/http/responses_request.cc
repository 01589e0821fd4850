#include "server/http/responses_request.h"

#include <set>

#include "server/http/generation_request.h"

namespace sparrow::server {
namespace {

using json = nlohmann::json;
using Item = openai::ResponseItemIn;

bool Fail(GenerationError* e, Status status, std::string param, std::string code = "") {
  e->status = std::move(status);
  e->param = std::move(param);
  e->code = std::move(code);
  return false;
}

// The field a conversation item came from: the request's input, or the stored conversation.
std::string ItemField(size_t i, size_t first_input) {
  return i < first_input ? "previous_response_id"
                         : "input[" + std::to_string(i - first_input) + "]";
}

// The items as chat messages. Items before `first_input` come from the stored conversation.
bool ToMessages(const std::vector<Item>& items, size_t first_input, std::vector<ChatMessage>* out,
                GenerationError* error) {
  std::set<std::string> calls;  // the call_ids of the calls so far
  std::string reasoning;        // for the assistant turn that follows it
  // An assistant message, then the calls it made, are one turn.
  auto assistant_turn = [&]() -> ChatMessage& {
    if (out->empty() || out->back().role != "assistant") {
      out->push_back(ChatMessage("assistant", ""));
      out->back().reasoning_content = std::move(reasoning);
      reasoning.clear();
    }
    return out->back();
  };
  for (size_t i = 0; i < items.size(); ++i) {
    const Item& it = items[i];
    switch (it.kind) {
      case Item::Kind::kMessage:
        if (it.role == "assistant") {
          ChatMessage m("assistant", it.text);
          m.reasoning_content = std::move(reasoning);
          reasoning.clear();
          out->push_back(std::move(m));
        } else {
          out->push_back(ChatMessage(it.role, it.text));
        }
        break;
      case Item::Kind::kReasoning:
        reasoning += it.text;
        break;
      case Item::Kind::kFunctionCall:
        assistant_turn().tool_calls.push_back({it.call_id, it.name, it.arguments});
        calls.insert(it.call_id);
        break;
      case Item::Kind::kFunctionCallOutput: {
        if (calls.count(it.call_id) == 0) {
          const std::string field = ItemField(i, first_input) + ".call_id";
          return Fail(error,
                      InvalidArgument("'" + field + "' is '" + it.call_id +
                                      "', which no earlier function_call item has"),
                      field);
        }
        // No name, as a chat client's tool message has none: the two dialects render alike.
        ChatMessage m("tool", it.text);
        m.tool_call_id = it.call_id;
        out->push_back(std::move(m));
        break;
      }
    }
  }
  return true;
}

void FillSpec(const openai::ResponsesRequest& r, const std::string& body, GenerationSpec* spec) {
  const openai::GenerationFields& g = r.gen;
  FillOutputFormat(g.format, body, spec);
  spec->kind = PromptKind::kChat;
  spec->model = g.model;
  spec->max_tokens = g.max_tokens;
  spec->sampling.temperature = g.temperature;
  spec->sampling.top_p = g.top_p;
  spec->sampling.top_k = 0;  // OpenAI has none
  spec->sampling.min_p = 0;
  spec->logit_bias = g.logit_bias;
  spec->forced_output = g.forced_output;
  FillTools(r.tools, r.tool_choice, r.tool_choice_name, r.parallel_tool_calls, spec);
  // Thinking always goes to a reasoning item, never into output_text.
  spec->reasoning_format = ReasoningFormat::kDeepSeek;
  if (r.reasoning_effort) spec->enable_thinking = *r.reasoning_effort != "none";
  spec->fields.prompt = "input";
  spec->fields.messages = "input";
  spec->fields.max_tokens = "max_output_tokens";
}

}  // namespace

bool PrepareResponse(const EngineFacade& engine, ResponseStore& store, const std::string& body,
                     PreparedResponse* out, GenerationError* error) {
  std::string param;
  auto parsed = openai::ParseRequestBody(body, &param);
  if (!parsed.ok()) return Fail(error, parsed.status(), param);
  auto r = openai::ParseResponsesRequest(*parsed, &param);
  if (!r.ok()) return Fail(error, r.status(), param);
  out->request = std::move(*r);
  const openai::ResponsesRequest& req = out->request;
  std::vector<Item> items;
  if (!req.previous_response_id.empty()) {
    auto prev = store.Get(req.previous_response_id);
    if (prev == nullptr) {
      return Fail(error,
                  NotFound("Previous response with id '" + req.previous_response_id +
                           "' not found (never stored, deleted, or expired from the store)"),
                  "previous_response_id", "previous_response_not_found");
    }
    out->conversation = json::parse(prev->conversation, nullptr, /*allow_exceptions=*/false);
    Status s =
        openai::ParseResponseItems(out->conversation, "previous_response_id", &items, &param);
    if (!s.ok()) return Fail(error, Internal("stored conversation: " + s.message()), param);
  }
  const size_t first_input = items.size();
  items.insert(items.end(), req.input.begin(), req.input.end());
  for (const json& it : req.input_items) out->conversation.push_back(it);
  GenerationSpec spec;
  FillSpec(req, body, &spec);
  if (!req.instructions.empty()) spec.messages.push_back(ChatMessage("system", req.instructions));
  if (!ToMessages(items, first_input, &spec.messages, error)) return false;
  return engine.Resolve(spec, &out->gen, error);
}

}  // namespace sparrow::server
