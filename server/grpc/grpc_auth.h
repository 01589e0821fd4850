#pragma once
// Bearer-key check for gRPC calls: metadata `authorization: Bearer <key>`. The key comparison
// takes the same time wherever the first difference is, so timing does not leak the key.
// Pure functions, thread-safe.
#include <grpcpp/server_context.h>

#include <string>
#include <string_view>

namespace sparrow::server {

// True when the strings are equal; time depends only on the lengths.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// OK when `api_key` is empty (auth off) or the call carries the right bearer key;
// UNAUTHENTICATED otherwise (the message says what was missing, never the key).
grpc::Status CheckBearerKey(const grpc::CallbackServerContext& context, const std::string& api_key);

}  // namespace sparrow::server
