#include "server/core/auth.h"

#include <spdlog/spdlog.h>

#include "config/server_config.h"
#include "server/core/api_key.h"

namespace sparrow::server {
namespace {

constexpr size_t kMinAdminKeyLength = 16;  // host keys too: both are held by machines
constexpr auto kFailureWindow = std::chrono::seconds(60);

using Outcome = AuthDecision::Outcome;

}  // namespace

const char* AuthDecision::code() const {
  switch (outcome) {
    case Outcome::kAllowed:
      return "";
    case Outcome::kMissingKey:
    case Outcome::kWrongKey:
      return "invalid_api_key";
    case Outcome::kWrongScope:
      return "insufficient_scope";
    case Outcome::kAdminDisabled:
      return "admin_disabled";
    case Outcome::kHostDisabled:
      return "host_disabled";
    case Outcome::kLockedOut:
      return "too_many_auth_failures";
  }
  return "";
}

bool IsLoopbackAddress(const std::string& a) {
  return a == "::1" || a.starts_with("127.") || a.starts_with("::ffff:127.");
}

Result<std::unique_ptr<Authenticator>> Authenticator::FromConfig(const ServerConfig& c,
                                                                 Metrics* metrics) {
  std::unique_ptr<Authenticator> a(new Authenticator());
  SPARROW_ASSIGN_OR_RETURN(a->api_, KeyRing::Load({"api", c.api_key, c.api_key_file, 1}));
  SPARROW_ASSIGN_OR_RETURN(
      a->host_, KeyRing::Load({"host", c.host_key, c.host_key_file, kMinAdminKeyLength}));
  SPARROW_ASSIGN_OR_RETURN(
      a->admin_, KeyRing::Load({"admin", c.admin_key, c.admin_key_file, kMinAdminKeyLength}));
  SPARROW_ASSIGN_OR_RETURN(a->trusted_proxies_,
                           TrustedProxies::Parse(c.trusted_proxy, "trusted_proxy"));
  a->limiter_ =
      std::make_unique<AuthFailureLimiter>(static_cast<int>(c.auth_failure_limit), kFailureWindow);
  a->admin_loopback_open_ = c.admin_loopback_open != 0;
  a->metrics_open_ = c.metrics_open != 0;
  a->metrics_ = metrics;
  return a;
}

AuthDecision Authenticator::Fail(AuthDecision d, const std::string& address,
                                 std::string_view what) {
  if (metrics_) metrics_->CountAuthFailure(d.code());
  if (limiter_->RecordFailure(address)) {
    spdlog::warn("auth: {} failed attempts from {} within {} s; refusing it for up to {} s",
                 limiter_->max_failures(), address, limiter_->window().count(),
                 limiter_->window().count());
  } else {
    spdlog::warn("auth: refused {} from {}: {}", what, address, d.message);
  }
  return d;
}

AuthDecision Authenticator::Check(AuthScope scope, std::string_view authorization,
                                  const std::string& address, std::string_view what) {
  AuthDecision d;
  if (scope == AuthScope::kOpen) return d;
  if (scope == AuthScope::kMetrics && metrics_open_) return d;
  const bool admin = scope == AuthScope::kAdmin, host = scope == AuthScope::kHost;
  if ((admin || host) && admin_loopback_open_ && IsLoopbackAddress(address)) {
    auto id = admin_->Match(BearerToken(authorization));
    d.key_id = id ? "admin:" + *id : "loopback";
    return d;
  }
  if (admin && admin_->empty()) {
    d.outcome = Outcome::kAdminDisabled;
    d.message = admin_loopback_open_
                    ? "the admin API takes no key only from loopback; from " + address +
                          " it needs an admin key, and none is configured (--admin-key-file)"
                    : "the admin API is off: start sparrowd with --admin-key-file (or "
                      "--admin-key) to turn it on";
    if (metrics_) metrics_->CountAuthFailure(d.code());
    return d;
  }
  if (host && host_->empty() && admin_->empty()) {
    // With no key of any scope the server is open (and on loopback: the config insists).
    if (api_->empty() && !admin_loopback_open_) return d;
    d.outcome = Outcome::kHostDisabled;
    d.message =
        "memory reports need a host key or an admin key, and neither is configured: start "
        "sparrowd with --host-key-file (an inference API key never reaches them)";
    if (metrics_) metrics_->CountAuthFailure(d.code());
    return d;
  }
  if (!admin && !host && api_->empty()) return d;  // the inference API is open
  if (const int64_t wait = limiter_->RetryAfterSeconds(address); wait > 0) {
    d.outcome = Outcome::kLockedOut;
    d.retry_after_s = wait;
    d.message =
        "too many failed key checks from " + address + "; retry in " + std::to_string(wait) + " s";
    if (metrics_) metrics_->CountAuthFailure(d.code());
    return d;
  }
  const std::string_view token = BearerToken(authorization);
  const std::string scheme = admin ? "admin key" : host ? "host key" : "API key";
  if (token.empty()) {
    d.outcome = Outcome::kMissingKey;
    d.message = authorization.empty() ? "Missing " + scheme + ": send 'Authorization: Bearer <key>'"
                                      : "The Authorization header must be 'Bearer <key>'";
    return Fail(std::move(d), address, what);
  }
  if (auto id = admin_->Match(token)) {
    d.key_id = "admin:" + *id;
    return d;  // an admin key reaches every scope
  }
  // Both rings are always searched, so timing does not tell which scope a wrong key missed.
  const std::optional<std::string> host_id = host_->Match(token);
  const std::optional<std::string> api_id = api_->Match(token);
  if (host && host_id) {
    d.key_id = "host:" + *host_id;
    return d;
  }
  if (!admin && !host && api_id) {
    d.key_id = "api:" + *api_id;
    return d;
  }
  if (host_id || api_id) {
    d.outcome = Outcome::kWrongScope;
    d.message = std::string(api_id ? "This is an inference API key" : "This is a host key") +
                (admin  ? "; admin routes need an admin key"
                 : host ? "; memory reports need a host key or an admin key"
                        : "; the inference API needs an API key");
    return Fail(std::move(d), address, what);
  }
  d.outcome = Outcome::kWrongKey;
  d.message = "Incorrect " + scheme;
  return Fail(std::move(d), address, what);
}

}  // namespace sparrow::server
