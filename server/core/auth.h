#pragma once
// Authenticator: the one place both frontends decide whether a call may proceed. Scopes:
// open (probes), the inference API (the api keys, when any is set; an admin key is accepted
// too), the host app's memory reports (host keys or admin keys, never an inference key: a
// report of RUNNING_CRITICAL starves the server) and the admin API (admin keys only; off when
// none is configured). Host and admin scopes are open on loopback only when
// admin_loopback_open is set. server/README.md ("Keys and scopes") has the table of what each
// key reaches. Failures are counted per client address (AuthFailureLimiter; the real client
// behind a trusted proxy, see trusted_proxies.h) and logged; a locked-out address is refused
// before keys are compared. Thread-safe.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "engine/common/result.h"
#include "server/core/auth_limiter.h"
#include "server/core/key_ring.h"
#include "server/core/metrics.h"
#include "server/core/trusted_proxies.h"

namespace sparrow {
struct ServerConfig;
}

namespace sparrow::server {

enum class AuthScope {
  kOpen,     // probes: /health, /ready, the dashboard's static files
  kApiKey,   // the inference API: needs an api key when one is set
  kAdmin,    // the admin API: needs an admin key; off without one
  kHost,     // the host app's memory reports: a host key or an admin key
  kMetrics,  // GET /metrics: as kApiKey, or open with metrics_open (a scraper in a cluster)
};

struct AuthDecision {
  enum class Outcome {
    kAllowed,
    kMissingKey,     // no usable 'Authorization: Bearer' credentials: 401
    kWrongKey,       // 401
    kWrongScope,     // a known key of another scope (an inference key on an admin route): 403
    kAdminDisabled,  // no admin key configured: 403
    kHostDisabled,   // a host route, and neither a host nor an admin key configured: 403
    kLockedOut,      // too many failures from this address: 429
  };
  Outcome outcome = Outcome::kAllowed;
  std::string key_id;  // kAllowed: the key's id ("" when the scope was open)
  std::string message;
  int64_t retry_after_s = 0;  // kLockedOut
  bool allowed() const { return outcome == Outcome::kAllowed; }
  // "invalid_api_key", "insufficient_scope", "admin_disabled", "host_disabled",
  // "too_many_auth_failures".
  const char* code() const;
};

class Authenticator {
 public:
  // Keys from api_key/api_key_file, host_key/host_key_file and admin_key/admin_key_file (host
  // and admin keys at least 16 characters), and the trusted_proxy list; errors name the
  // setting or the file and line.
  static Result<std::unique_ptr<Authenticator>> FromConfig(const ServerConfig& config,
                                                           Metrics* metrics);

  // `authorization`: the Authorization header or gRPC metadata value ("" when absent).
  // `address`: the client's IP address, without port. `what` names the route for the log.
  AuthDecision Check(AuthScope scope, std::string_view authorization, const std::string& address,
                     std::string_view what);

  bool admin_enabled() const { return !admin_->empty() || admin_loopback_open_; }
  bool api_keys_set() const { return !api_->empty(); }
  // The balancers whose PROXY headers and X-Forwarded-For are believed.
  const TrustedProxies& trusted_proxies() const { return trusted_proxies_; }

 private:
  Authenticator() = default;
  AuthDecision Fail(AuthDecision d, const std::string& address, std::string_view what);

  std::unique_ptr<KeyRing> api_;
  std::unique_ptr<KeyRing> host_;
  std::unique_ptr<KeyRing> admin_;
  TrustedProxies trusted_proxies_;
  std::unique_ptr<AuthFailureLimiter> limiter_;
  bool admin_loopback_open_ = false;
  bool metrics_open_ = false;
  Metrics* metrics_ = nullptr;
};

// True for 127.0.0.0/8 and ::1 (and IPv4-mapped loopback).
bool IsLoopbackAddress(const std::string& address);

}  // namespace sparrow::server
