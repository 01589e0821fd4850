#pragma once
// Translation of sparrow::Status into the HTTP status a client sees, beside grpc_status.h for
// gRPC, so that one refusal reads the same on both frontends.
// clang-format off
#include <ostream>  // Boost 1.74 beast/http/status.hpp uses std::ostream without including it
#include <boost/beast/http/status.hpp>
// clang-format on

#include "engine/common/status.h"

namespace sparrow::server {

// InvalidArgument/OutOfRange/Unsupported -> 400, NotFound -> 404, ResourceExhausted -> 429,
// Cancelled -> 503, everything else (Corrupt, IoError, Internal) -> 500.
boost::beast::http::status HttpStatusFor(StatusCode code);

}  // namespace sparrow::server
