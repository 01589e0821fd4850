#include "server/grpc/grpc_auth.h"

#include "server/core/api_key.h"

namespace sparrow::server {

grpc::Status CheckBearerKey(const grpc::CallbackServerContext& context,
                            const std::string& api_key) {
  if (api_key.empty()) return grpc::Status::OK;
  const auto& md = context.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "missing metadata 'authorization: Bearer <key>'");
  }
  const std::string_view value(it->second.data(), it->second.size());
  if (BearerToken(value).empty()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "metadata 'authorization' must be 'Bearer <key>'");
  }
  if (!BearerKeyMatches(value, api_key)) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "wrong API key");
  }
  return grpc::Status::OK;
}

}  // namespace sparrow::server
