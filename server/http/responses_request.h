#pragma once
// Turns a Responses API body (POST /v1/responses) into a generation: the request parsed
// (api/openai/openai_responses.h), the conversation of previous_response_id taken from the
// store and put before this input, the items made chat messages (instructions first, function
// calls on the assistant turn that made them, their outputs as tool messages), then prepared as
// every frontend prepares a chat (ResolveGeneration). Thread-safe.
#include <nlohmann/json.hpp>
#include <string>

#include "api/openai/openai_responses.h"
#include "server/core/engine_facade.h"
#include "server/core/generation_spec.h"
#include "server/core/response_store.h"

namespace sparrow::server {

struct PreparedResponse {
  openai::ResponsesRequest request;
  ResolvedGeneration gen;
  // The items of the conversation so far, the previous response's and this input: what a
  // stored response keeps, its output appended.
  nlohmann::json conversation = nlohmann::json::array();
};

// Either `*out` is filled (returns true) or `*error` is: 400 naming the field, 404 for a
// previous_response_id the store does not hold (expired, evicted, deleted or never stored).
bool PrepareResponse(const EngineFacade& engine, ResponseStore& store, const std::string& body,
                     PreparedResponse* out, GenerationError* error);

}  // namespace sparrow::server
