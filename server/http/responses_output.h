#pragma once
// ResponseAssembler: the Responses API's answer as the chat answer's parser hands it over, in
// both forms at once: the response object with its output items (a reasoning item, a message
// with output_text, function_call items, in the order the model wrote them), and the typed
// stream events that build it (response.created ... response.completed, each with its
// sequence_number). A non-streamed request keeps the object and drops the events. Not
// thread-safe: one per response.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/openai/openai_responses.h"
#include "server/chat/chat_output.h"

namespace sparrow::server {

// How the generation ended, for the response's status and usage.
struct ResponseEnd {
  std::string finish_reason;  // StreamingSink's: "stop", "length", "cancelled"
  int64_t input_tokens = 0;
  int64_t cached_tokens = 0;
  int64_t output_tokens = 0;
  int64_t reasoning_tokens = 0;
};

class ResponseAssembler {
 public:
  using Events = std::vector<nlohmann::json>;

  // The response `id` ("resp_..."), with the request's settings echoed as OpenAI echoes them.
  ResponseAssembler(std::string id, const std::string& model,
                    const openai::ResponsesRequest& request);

  // response.created and response.in_progress.
  Events Start();
  // The events for what `delta` made certain: items opened, text deltas, calls.
  Events Push(const ChatDelta& delta);
  // Closes the open item and sets status, incomplete_details and usage; the last events
  // (response.completed, or response.incomplete when max_output_tokens was hit).
  Events Finish(const ResponseEnd& end);
  // The generation failed: response.failed with the error.
  Events Fail(const std::string& message);

  const nlohmann::json& response() const { return response_; }
  // The output items as input items of a later turn (they are the same shapes).
  const nlohmann::json& output() const { return response_["output"]; }
  const std::string& reasoning_text() const { return reasoning_text_; }

 private:
  enum class Open { kNone, kReasoning, kMessage };

  nlohmann::json Event(const char* type, nlohmann::json fields);
  void OpenItem(Open kind, Events* ev);
  void CloseItem(const char* status, Events* ev);
  void Call(const ChatToolCall& call, Events* ev);
  nlohmann::json& Current() { return response_["output"].back(); }
  int OutputIndex() const { return static_cast<int>(response_["output"].size()) - 1; }

  nlohmann::json response_;
  int64_t sequence_ = 0;
  Open open_ = Open::kNone;
  std::string text_;  // the open item's text so far
  std::string reasoning_text_;
};

}  // namespace sparrow::server
