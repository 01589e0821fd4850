#pragma once
// Bearer-key check for gRPC calls: metadata `authorization: Bearer <key>`, compared in
// constant time (server/core/api_key.h). Pure function, thread-safe.
#include <grpcpp/server_context.h>

#include <string>

namespace sparrow::server {

// OK when `api_key` is empty (auth off) or the call carries the right bearer key;
// UNAUTHENTICATED otherwise (the message says what was missing, never the key).
grpc::Status CheckBearerKey(const grpc::CallbackServerContext& context, const std::string& api_key);

}  // namespace sparrow::server
