#pragma once
// The PROXY protocol, version 2 (HAProxy's `send-proxy-v2`): a binary header a balancer sends
// first on each connection to say whose connection it relays. Parsed strictly: the exact
// signature, version 2, command LOCAL or PROXY, TCP over IPv4 or IPv6, an address block of the
// family's size and TLVs that fill the rest exactly; anything else is an error and the caller
// closes that connection. Bounded: the whole header is at most kProxyV2MaxBytes. Only peers in
// --trusted-proxy may send one (TrustedProxies); from others the bytes are just a bad request.
// Pure functions, thread-safe.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "engine/common/result.h"
#include "server/core/trusted_proxies.h"

namespace sparrow::server {

// The fixed part: 12 signature bytes, version/command, family/transport, a 2-byte length.
inline constexpr size_t kProxyV2FixedBytes = 16;
// The longest header accepted, fixed part included: addresses (36 for IPv6) and a few TLVs
// (HAProxy sends none unless told to; ALPN, authority and SSL ones fit).
inline constexpr size_t kProxyV2MaxBytes = 1024;

// A connection's first byte; only a PROXY v2 header starts with it (not an HTTP method, not a
// TLS record), so one byte decides which it is.
inline constexpr uint8_t kProxyV2FirstByte = 0x0D;

struct ProxyV2Header {
  // LOCAL: the balancer's own connection (a health check): the peer is the client.
  bool local = false;
  std::optional<IpAddress> source;  // PROXY: the client the balancer relays
  uint16_t source_port = 0;
};

// Checks the fixed part; returns how many bytes follow it (the whole header is 16 + that).
// InvalidArgument saying what is wrong: the signature, version, command, family, or a length
// beyond kProxyV2MaxBytes or too short for the family's addresses.
Result<size_t> ProxyV2RemainingBytes(std::span<const uint8_t> fixed);

// Parses a whole header (exactly 16 + ProxyV2RemainingBytes bytes).
Result<ProxyV2Header> ParseProxyV2(std::span<const uint8_t> header);

}  // namespace sparrow::server
