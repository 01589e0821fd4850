#include "server/grpc/grpc_auth.h"

#include <algorithm>

namespace sparrow::server {

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  // Walk the longer length so a short guess costs as much as a long one.
  const size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

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
  constexpr std::string_view kPrefix = "Bearer ";
  if (value.size() < kPrefix.size() || value.substr(0, kPrefix.size()) != kPrefix) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "metadata 'authorization' must be 'Bearer <key>'");
  }
  if (!ConstantTimeEquals(value.substr(kPrefix.size()), api_key)) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "wrong API key");
  }
  return grpc::Status::OK;
}

}  // namespace sparrow::server
