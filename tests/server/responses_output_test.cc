// ResponseAssembler: the output items and the typed stream events it makes from a chat
// answer's deltas, in order, with consecutive sequence numbers.
#include "server/http/responses_output.h"

#include <gtest/gtest.h>

namespace sparrow::server {
namespace {

using json = nlohmann::json;

std::vector<std::string> Types(const std::vector<json>& events) {
  std::vector<std::string> out;
  for (const json& e : events) out.push_back(e["type"]);
  return out;
}

void Append(std::vector<json>* all, std::vector<json> more) {
  for (json& e : more) all->push_back(std::move(e));
}

ChatDelta Delta(std::string reasoning, std::string content, std::vector<ChatToolCall> calls = {}) {
  ChatDelta d;
  d.reasoning = std::move(reasoning);
  d.content = std::move(content);
  d.tool_calls = std::move(calls);
  return d;
}

TEST(ResponsesOutputTest, ItemsAndEventsFollowTheAnswer) {
  openai::ResponsesRequest req;
  req.instructions = "Be brief.";
  ResponseAssembler a("resp_1", "m", req);
  std::vector<json> ev = a.Start();
  Append(&ev, a.Push(Delta("Think", "")));
  Append(&ev, a.Push(Delta("ing.", "Hel")));
  Append(&ev, a.Push(Delta("", "lo", {{"call_1", "f", "{\"x\":1}"}})));
  ResponseEnd end;
  end.finish_reason = "stop";
  end.input_tokens = 7;
  end.output_tokens = 5;
  end.reasoning_tokens = 2;
  Append(&ev, a.Finish(end));
  const std::vector<std::string> want = {"response.created",
                                         "response.in_progress",
                                         "response.output_item.added",
                                         "response.content_part.added",
                                         "response.reasoning_text.delta",
                                         "response.reasoning_text.delta",
                                         "response.reasoning_text.done",
                                         "response.content_part.done",
                                         "response.output_item.done",
                                         "response.output_item.added",
                                         "response.content_part.added",
                                         "response.output_text.delta",
                                         "response.output_text.delta",
                                         "response.output_text.done",
                                         "response.content_part.done",
                                         "response.output_item.done",
                                         "response.output_item.added",
                                         "response.function_call_arguments.delta",
                                         "response.function_call_arguments.done",
                                         "response.output_item.done",
                                         "response.completed"};
  EXPECT_EQ(Types(ev), want);
  for (size_t i = 0; i < ev.size(); ++i) EXPECT_EQ(ev[i]["sequence_number"], i);
  EXPECT_EQ(ev[0]["response"]["output"], json::array());
  EXPECT_EQ(ev[0]["response"]["status"], "in_progress");
  const json& r = a.response();
  EXPECT_EQ(r["status"], "completed");
  EXPECT_EQ(r["instructions"], "Be brief.");
  ASSERT_EQ(r["output"].size(), 3u);
  EXPECT_EQ(r["output"][0]["content"][0]["text"], "Thinking.");
  EXPECT_EQ(r["output"][1]["content"][0]["text"], "Hello");
  EXPECT_EQ(r["output"][1]["status"], "completed");
  EXPECT_EQ(r["output"][2]["call_id"], "call_1");
  EXPECT_EQ(r["output"][2]["arguments"], "{\"x\":1}");
  EXPECT_EQ(ev[13]["text"], "Hello");  // output_text.done
  EXPECT_EQ(ev[12]["output_index"], 1);
  EXPECT_EQ(r["usage"]["total_tokens"], 12);
  EXPECT_EQ(r["usage"]["output_tokens_details"]["reasoning_tokens"], 2);
  EXPECT_EQ(a.reasoning_text(), "Thinking.");
}

TEST(ResponsesOutputTest, LengthEndsIncompleteAndNothingIsStillAMessage) {
  ResponseAssembler a("resp_2", "m", {});
  ResponseEnd end;
  end.finish_reason = "length";
  const std::vector<json> ev = a.Finish(end);
  EXPECT_EQ(ev.back()["type"], "response.incomplete");
  EXPECT_EQ(a.response()["status"], "incomplete");
  EXPECT_EQ(a.response()["incomplete_details"]["reason"], "max_output_tokens");
  ASSERT_EQ(a.output().size(), 1u);
  EXPECT_EQ(a.output()[0]["type"], "message");
  EXPECT_EQ(a.output()[0]["status"], "incomplete");
  EXPECT_EQ(a.output()[0]["content"][0]["text"], "");
}

TEST(ResponsesOutputTest, FailureCarriesTheError) {
  ResponseAssembler a("resp_3", "m", {});
  const std::vector<json> ev = a.Fail("flash read failed");
  EXPECT_EQ(ev.back()["type"], "response.failed");
  EXPECT_EQ(a.response()["status"], "failed");
  EXPECT_EQ(a.response()["error"]["message"], "flash read failed");
}

}  // namespace
}  // namespace sparrow::server
