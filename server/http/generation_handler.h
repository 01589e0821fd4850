#pragma once
// The /v1/chat/completions and /v1/completions routes: submit n generations to the scheduler
// and answer with one JSON body or an SSE stream. A stream whose client goes away (a write
// fails) cancels its generations so their KV blocks are freed at the next step.
// clang-format off
#include <utility>  // Boost 1.74 asio/awaitable.hpp uses std::exchange without including it
#include <boost/asio/awaitable.hpp>
// clang-format on
#include <boost/beast/core/tcp_stream.hpp>

#include "server/core/server_context.h"
#include "server/http/http_util.h"

namespace sparrow::server {

struct GenerationLimits {
  size_t max_pending_chunks = 1024;  // per choice, see StreamingSinkOptions
};

// Returns whether the connection may be kept alive.
boost::asio::awaitable<bool> HandleGeneration(boost::beast::tcp_stream& stream,
                                              const HttpRequest& req, bool chat, ServerContext& ctx,
                                              const GenerationLimits& limits, RequestLog* log);

}  // namespace sparrow::server
