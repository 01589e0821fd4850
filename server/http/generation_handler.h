#pragma once
// The /v1/chat/completions and /v1/completions routes: submit n generations to the scheduler
// and answer with one JSON body or an SSE stream (chunked on HTTP/1.1, close-delimited on
// HTTP/1.0). A client that goes away cancels its generations so their KV blocks are freed at
// the next step: a stream notices at its next write, a non-stream request by watching the
// socket while it waits. Generations cancelled by a shutdown still get a complete answer, with
// finish_reason "cancelled".
// clang-format off
#include <utility>  // Boost 1.74 asio/awaitable.hpp uses std::exchange without including it
#include <boost/asio/awaitable.hpp>
// clang-format on
#include <chrono>
#include <memory>
#include <vector>

#include "server/core/engine_facade.h"
#include "server/core/server_context.h"
#include "server/http/http_router.h"
#include "server/http/http_stream.h"
#include "server/http/http_util.h"
#include "server/http/wakeup.h"

namespace sparrow::server {

struct GenerationLimits {
  size_t max_pending_chunks = 1024;     // per choice, see StreamingSinkOptions
  size_t max_buffered_bytes = 4 << 20;  // undelivered stream output, all choices together
  std::chrono::milliseconds write_timeout{30000};
};

struct SubmittedChoices {
  std::vector<std::shared_ptr<StreamingSink>> sinks;  // one per choice
  RequestRegistry::Ticket ticket;                     // the request's listing in ctx.requests
};

// Makes a sink per choice of `g` (each waking `wakeup`), submits them as one group and lists the
// request in ctx.requests (route ex.path). On refusal returns false with `*error` the answer:
// 429 queue_full or 503 draining / memory_pressure, with Retry-After.
bool SubmitChoices(HttpExchange& ex, const EngineFacade& engine, const ResolvedGeneration& g,
                   bool stream, const GenerationLimits& limits, std::shared_ptr<Wakeup> wakeup,
                   SubmittedChoices* out, HttpResponse* error);

// Returns whether the connection may be kept alive. While it runs, the request is listed in
// ctx.requests (the admin API can see and cancel it); its id goes out as X-Request-Id.
boost::asio::awaitable<bool> HandleGeneration(HttpExchange& ex, bool chat,
                                              const GenerationLimits& limits);

}  // namespace sparrow::server
