#pragma once
// TrustedProxies: the balancers (--trusted-proxy CIDR,...) whose word on the client's address
// sparrowd believes, in a PROXY protocol v2 header or in X-Forwarded-For. Behind a balancer every
// connection comes from the balancer, so without this the failure lockout (AuthFailureLimiter)
// and admin_loopback_open would see one client: ten bad keys from anyone would lock out
// everyone. From any other peer neither is believed: a client cannot pick its own address.
// Immutable after Parse; thread-safe.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/result.h"

namespace sparrow::server {

// An IP address in 16 bytes: IPv4 as IPv4-mapped IPv6 (::ffff:a.b.c.d), so one comparison
// covers both and a dual-stack socket's "::ffff:10.0.0.1" equals "10.0.0.1".
struct IpAddress {
  std::array<uint8_t, 16> bytes{};
  bool v4() const;
  std::string ToString() const;  // "10.0.0.1" for a mapped IPv4 address
  static std::optional<IpAddress> Parse(std::string_view text);
  static IpAddress FromV4(const uint8_t (&b)[4]);
  static IpAddress FromV6(const uint8_t (&b)[16]);
};

class TrustedProxies {
 public:
  // "10.0.0.0/8,fd00::/8,127.0.0.1" (a bare address is one host); "" -> none. InvalidArgument
  // naming `setting` and the entry at fault.
  static Result<TrustedProxies> Parse(std::string_view list, std::string_view setting);

  bool empty() const { return ranges_.empty(); }
  bool Contains(const IpAddress& a) const;
  bool Contains(std::string_view address) const;

  // The client an X-Forwarded-For header names, from a request whose peer is `peer`: when the
  // peer is trusted, the rightmost entry that is not itself a trusted proxy (proxies append
  // the address they received from, so entries left of an untrusted one are the client's own
  // claims). The peer itself when it is not trusted, when the header is absent, or when an
  // entry it would use is not an IP address.
  std::string ClientOf(const std::string& peer, std::string_view x_forwarded_for) const;

 private:
  struct Range {
    IpAddress base;
    int prefix_bits = 128;
  };
  std::vector<Range> ranges_;
};

}  // namespace sparrow::server
