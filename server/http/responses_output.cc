#include "server/http/responses_output.h"

#include <chrono>

#include "server/chat/random_id.h"

namespace sparrow::server {
namespace {

using json = nlohmann::json;

json OrNull(const std::string& s) {
  return s.empty() ? json(nullptr) : json(s);
}

json ToolsJson(const openai::ResponsesRequest& r) {
  json tools = json::array();
  for (const auto& t : r.tools) {
    tools.push_back({{"type", "function"},
                     {"name", t.name},
                     {"description", OrNull(t.description)},
                     {"parameters", t.parameters},
                     {"strict", false}});
  }
  return tools;
}

json ToolChoiceJson(const openai::ResponsesRequest& r) {
  if (r.tool_choice == "function") return {{"type", "function"}, {"name", r.tool_choice_name}};
  return r.tool_choice.empty() ? "auto" : r.tool_choice;
}

// The item a kind opens, with no content yet.
json NewItem(bool reasoning) {
  if (reasoning) {
    return {{"id", "rs_" + RandomAlnum(24)},
            {"type", "reasoning"},
            {"summary", json::array()},
            {"content", json::array()},
            {"status", "in_progress"}};
  }
  return {{"id", "msg_" + RandomAlnum(24)},
          {"type", "message"},
          {"status", "in_progress"},
          {"role", "assistant"},
          {"content", json::array()}};
}

json Part(bool reasoning, const std::string& text) {
  if (reasoning) return {{"type", "reasoning_text"}, {"text", text}};
  return {{"type", "output_text"},
          {"text", text},
          {"annotations", json::array()},
          {"logprobs", json::array()}};
}

}  // namespace

ResponseAssembler::ResponseAssembler(std::string id, const std::string& model,
                                     const openai::ResponsesRequest& r) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const openai::GenerationFields& g = r.gen;
  response_ = {
      {"id", std::move(id)},
      {"object", "response"},
      {"created_at", std::chrono::duration_cast<std::chrono::seconds>(now).count()},
      {"status", "in_progress"},
      {"background", false},
      {"error", nullptr},
      {"incomplete_details", nullptr},
      {"instructions", OrNull(r.instructions)},
      {"max_output_tokens", g.max_tokens ? json(*g.max_tokens) : json(nullptr)},
      {"model", model},
      {"output", json::array()},
      {"parallel_tool_calls", r.parallel_tool_calls},
      {"previous_response_id", OrNull(r.previous_response_id)},
      {"reasoning",
       {{"effort", r.reasoning_effort ? json(*r.reasoning_effort) : json(nullptr)},
        {"summary", r.reasoning_summary ? json(*r.reasoning_summary) : json(nullptr)}}},
      {"store", r.store},
      {"temperature", g.temperature},
      {"text", {{"format", r.text_format}}},
      {"tool_choice", ToolChoiceJson(r)},
      {"tools", ToolsJson(r)},
      {"top_p", g.top_p},
      {"truncation", "disabled"},
      {"usage", nullptr},
      {"user", OrNull(g.user)},
      {"metadata", r.metadata},
  };
}

json ResponseAssembler::Event(const char* type, json fields) {
  fields["type"] = type;
  fields["sequence_number"] = sequence_++;
  return fields;
}

ResponseAssembler::Events ResponseAssembler::Start() {
  Events ev;
  ev.push_back(Event("response.created", {{"response", response_}}));
  ev.push_back(Event("response.in_progress", {{"response", response_}}));
  return ev;
}

void ResponseAssembler::OpenItem(Open kind, Events* ev) {
  if (open_ == kind) return;
  CloseItem("completed", ev);
  const bool reasoning = kind == Open::kReasoning;
  response_["output"].push_back(NewItem(reasoning));
  open_ = kind;
  text_.clear();
  const json& item = Current();
  ev->push_back(
      Event("response.output_item.added", {{"output_index", OutputIndex()}, {"item", item}}));
  ev->push_back(Event("response.content_part.added", {{"item_id", item["id"]},
                                                      {"output_index", OutputIndex()},
                                                      {"content_index", 0},
                                                      {"part", Part(reasoning, "")}}));
}

void ResponseAssembler::CloseItem(const char* status, Events* ev) {
  if (open_ == Open::kNone) return;
  const bool reasoning = open_ == Open::kReasoning;
  json& item = Current();
  const json id = item["id"];
  const json part = Part(reasoning, text_);
  json done = {
      {"item_id", id}, {"output_index", OutputIndex()}, {"content_index", 0}, {"text", text_}};
  if (!reasoning) done["logprobs"] = json::array();
  ev->push_back(Event(reasoning ? "response.reasoning_text.done" : "response.output_text.done",
                      std::move(done)));
  ev->push_back(Event(
      "response.content_part.done",
      {{"item_id", id}, {"output_index", OutputIndex()}, {"content_index", 0}, {"part", part}}));
  item["content"] = json::array({part});
  item["status"] = status;
  ev->push_back(
      Event("response.output_item.done", {{"output_index", OutputIndex()}, {"item", item}}));
  open_ = Open::kNone;
  text_.clear();
}

void ResponseAssembler::Call(const ChatToolCall& call, Events* ev) {
  CloseItem("completed", ev);
  response_["output"].push_back({{"id", "fc_" + RandomAlnum(24)},
                                 {"type", "function_call"},
                                 {"status", "in_progress"},
                                 {"call_id", call.id},
                                 {"name", call.name},
                                 {"arguments", ""}});
  json& item = Current();
  const json id = item["id"];
  ev->push_back(
      Event("response.output_item.added", {{"output_index", OutputIndex()}, {"item", item}}));
  // The parser hands over whole calls: one delta carries all the arguments.
  ev->push_back(
      Event("response.function_call_arguments.delta",
            {{"item_id", id}, {"output_index", OutputIndex()}, {"delta", call.arguments}}));
  ev->push_back(Event("response.function_call_arguments.done", {{"item_id", id},
                                                                {"output_index", OutputIndex()},
                                                                {"name", call.name},
                                                                {"arguments", call.arguments}}));
  item["arguments"] = call.arguments;
  item["status"] = "completed";
  ev->push_back(
      Event("response.output_item.done", {{"output_index", OutputIndex()}, {"item", item}}));
}

ResponseAssembler::Events ResponseAssembler::Push(const ChatDelta& d) {
  Events ev;
  if (!d.reasoning.empty()) {
    OpenItem(Open::kReasoning, &ev);
    text_ += d.reasoning;
    reasoning_text_ += d.reasoning;
    ev.push_back(Event("response.reasoning_text.delta", {{"item_id", Current()["id"]},
                                                         {"output_index", OutputIndex()},
                                                         {"content_index", 0},
                                                         {"delta", d.reasoning}}));
  }
  if (!d.content.empty()) {
    OpenItem(Open::kMessage, &ev);
    text_ += d.content;
    ev.push_back(Event("response.output_text.delta", {{"item_id", Current()["id"]},
                                                      {"output_index", OutputIndex()},
                                                      {"content_index", 0},
                                                      {"delta", d.content},
                                                      {"logprobs", json::array()}}));
  }
  for (const ChatToolCall& call : d.tool_calls) Call(call, &ev);
  return ev;
}

ResponseAssembler::Events ResponseAssembler::Finish(const ResponseEnd& end) {
  Events ev;
  const bool length = end.finish_reason == "length";
  // An answer of nothing is still a message, so that output_text is "".
  if (response_["output"].empty()) OpenItem(Open::kMessage, &ev);
  CloseItem(length ? "incomplete" : "completed", &ev);
  const char* status = length                             ? "incomplete"
                       : end.finish_reason == "cancelled" ? "cancelled"
                                                          : "completed";
  response_["status"] = status;
  if (length) response_["incomplete_details"] = {{"reason", "max_output_tokens"}};
  response_["usage"] = {
      {"input_tokens", end.input_tokens},
      {"input_tokens_details", {{"cached_tokens", end.cached_tokens}}},
      {"output_tokens", end.output_tokens},
      {"output_tokens_details", {{"reasoning_tokens", end.reasoning_tokens}}},
      {"total_tokens", end.input_tokens + end.output_tokens},
  };
  const bool completed = std::string(status) == "completed";
  ev.push_back(
      Event(completed ? "response.completed" : "response.incomplete", {{"response", response_}}));
  return ev;
}

ResponseAssembler::Events ResponseAssembler::Fail(const std::string& message) {
  Events ev;
  response_["status"] = "failed";
  response_["error"] = {{"code", "server_error"}, {"message", message}};
  ev.push_back(Event("response.failed", {{"response", response_}}));
  return ev;
}

}  // namespace sparrow::server
