#include "server/grpc/grpc_auth.h"

namespace sparrow::server {

std::string PeerAddress(const std::string& peer) {
  std::string_view p(peer);
  if (p.starts_with("ipv4:")) {
    p.remove_prefix(5);
    return std::string(p.substr(0, p.rfind(':')));
  }
  if (p.starts_with("ipv6:")) {
    p.remove_prefix(5);
    if (p.starts_with("[")) {
      p.remove_prefix(1);
      return std::string(p.substr(0, p.find(']')));
    }
  }
  return peer;
}

grpc::Status Authorize(ServerContext& ctx, const grpc::ServerContextBase& call, AuthScope scope,
                       std::string_view what, std::string* key_id) {
  if (!ctx.auth) return grpc::Status::OK;
  const auto& md = call.client_metadata();
  auto it = md.find("authorization");
  const std::string_view value =
      it == md.end() ? std::string_view() : std::string_view(it->second.data(), it->second.size());
  // Behind a trusted balancer the client is the one its x-forwarded-for names.
  auto xff = md.find("x-forwarded-for");
  const std::string client = ctx.auth->trusted_proxies().ClientOf(
      PeerAddress(call.peer()), xff == md.end()
                                    ? std::string_view()
                                    : std::string_view(xff->second.data(), xff->second.size()));
  const AuthDecision d = ctx.auth->Check(scope, value, client, what);
  using O = AuthDecision::Outcome;
  switch (d.outcome) {
    case O::kAllowed:
      if (key_id) *key_id = d.key_id;
      return grpc::Status::OK;
    case O::kMissingKey:
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          it == md.end() ? "missing metadata 'authorization: Bearer <key>'"
                                         : "metadata 'authorization' must be 'Bearer <key>'");
    case O::kWrongKey:
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, d.message);
    case O::kWrongScope:
    case O::kAdminDisabled:
    case O::kHostDisabled:
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, d.message);
    case O::kLockedOut:
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, d.message);
  }
  return grpc::Status(grpc::StatusCode::INTERNAL, "auth");
}

}  // namespace sparrow::server
