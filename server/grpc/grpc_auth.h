#pragma once
// The bearer-key check of gRPC calls: metadata `authorization: Bearer <key>`, decided by the
// context's Authenticator (server/core/auth.h) for the call's scope, with the client's
// address from the call's peer (or its x-forwarded-for metadata when the peer is a trusted
// proxy). Thread-safe.
#include <grpcpp/server_context.h>

#include <string>
#include <string_view>

#include "server/core/auth.h"
#include "server/core/server_context.h"

namespace sparrow::server {

// OK (and the key's id in *key_id) when the call may proceed; otherwise UNAUTHENTICATED
// (missing or wrong key), PERMISSION_DENIED (a key of another scope, e.g. an inference key on
// the admin service, or the scope off) or RESOURCE_EXHAUSTED (too many failures from this
// address). The message says what was wrong, never the key.
grpc::Status Authorize(ServerContext& ctx, const grpc::ServerContextBase& call, AuthScope scope,
                       std::string_view what, std::string* key_id);

// The IP address in a gRPC peer string: "ipv4:10.0.0.2:5000" -> "10.0.0.2",
// "ipv6:[::1]:5000" -> "::1"; other forms come back unchanged.
std::string PeerAddress(const std::string& peer);

}  // namespace sparrow::server
