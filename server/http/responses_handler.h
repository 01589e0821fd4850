#pragma once
// The Responses API's routes: POST /v1/responses (one generation, answered as a response object
// or as the typed SSE events that build it), GET and DELETE /v1/responses/{id} over the stored
// responses (ServerContext::responses). A client that goes away cancels its generation, as on
// the chat routes (generation_handler.h); a response is stored (store: true) before its last
// event is written, so a client may continue from it as soon as it has the id.
// clang-format off
#include <utility>  // Boost 1.74 asio/awaitable.hpp uses std::exchange without including it
#include <boost/asio/awaitable.hpp>
// clang-format on

#include "server/http/http_router.h"

namespace sparrow::server {

// Adds POST /v1/responses, GET /v1/responses/{id} and DELETE /v1/responses/{id}.
void AddResponsesRoutes(HttpRouter& router);

}  // namespace sparrow::server
