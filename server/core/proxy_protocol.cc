#include "server/core/proxy_protocol.h"

#include <cstring>
#include <string>

namespace sparrow::server {
namespace {

constexpr uint8_t kSignature[12] = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D,
                                    0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};
constexpr uint8_t kCommandLocal = 0x0, kCommandProxy = 0x1;
constexpr uint8_t kFamilyInet = 0x1, kFamilyInet6 = 0x2;
constexpr uint8_t kTransportStream = 0x1;
constexpr size_t kInetAddressBytes = 12, kInet6AddressBytes = 36;

Status Bad(const std::string& why) {
  return InvalidArgument("PROXY protocol v2 header: " + why);
}

std::string Hex(uint8_t b) {
  static constexpr char kDigits[] = "0123456789abcdef";
  return {'0', 'x', kDigits[b >> 4], kDigits[b & 0x0f]};
}

size_t AddressBytes(uint8_t family) {
  return family == kFamilyInet ? kInetAddressBytes : kInet6AddressBytes;
}

}  // namespace

Result<size_t> ProxyV2RemainingBytes(std::span<const uint8_t> fixed) {
  if (fixed.size() < kProxyV2FixedBytes) return Bad("shorter than its 16 fixed bytes");
  if (std::memcmp(fixed.data(), kSignature, sizeof kSignature) != 0) {
    return Bad("the signature is wrong (not a PROXY v2 header)");
  }
  const uint8_t version = fixed[12] >> 4, command = fixed[12] & 0x0f;
  if (version != 2) return Bad("version " + std::to_string(version) + ", not 2");
  if (command != kCommandLocal && command != kCommandProxy) {
    return Bad("command " + std::to_string(command) + " is neither LOCAL (0) nor PROXY (1)");
  }
  const uint8_t family = fixed[13] >> 4, transport = fixed[13] & 0x0f;
  const size_t remaining = size_t{fixed[14]} << 8 | fixed[15];
  if (remaining > kProxyV2MaxBytes - kProxyV2FixedBytes) {
    return Bad("declares " + std::to_string(remaining) + " bytes after its fixed part; at most " +
               std::to_string(kProxyV2MaxBytes - kProxyV2FixedBytes) + " are accepted");
  }
  if (command == kCommandLocal) return remaining;  // its address block, if any, is ignored
  if ((family != kFamilyInet && family != kFamilyInet6) || transport != kTransportStream) {
    return Bad("family/transport " + Hex(fixed[13]) +
               " is not TCP over IPv4 (0x11) or IPv6 (0x21)");
  }
  if (remaining < AddressBytes(family)) {
    return Bad(std::to_string(remaining) + " bytes cannot hold the " +
               std::to_string(AddressBytes(family)) + "-byte address block of its family");
  }
  return remaining;
}

Result<ProxyV2Header> ParseProxyV2(std::span<const uint8_t> header) {
  SPARROW_ASSIGN_OR_RETURN(const size_t remaining, ProxyV2RemainingBytes(header));
  if (header.size() != kProxyV2FixedBytes + remaining) {
    return Bad(std::to_string(header.size()) + " bytes given for a header of " +
               std::to_string(kProxyV2FixedBytes + remaining));
  }
  ProxyV2Header h;
  if ((header[12] & 0x0f) == kCommandLocal) {
    h.local = true;
    return h;
  }
  const uint8_t family = header[13] >> 4;
  const uint8_t* p = header.data() + kProxyV2FixedBytes;
  if (family == kFamilyInet) {
    uint8_t src[4];
    std::memcpy(src, p, 4);
    h.source = IpAddress::FromV4(src);
    h.source_port = static_cast<uint16_t>(p[8] << 8 | p[9]);
  } else {
    uint8_t src[16];
    std::memcpy(src, p, 16);
    h.source = IpAddress::FromV6(src);
    h.source_port = static_cast<uint16_t>(p[32] << 8 | p[33]);
  }
  // TLVs (type, 2-byte length, value) must fill the rest exactly.
  size_t at = kProxyV2FixedBytes + AddressBytes(family);
  while (at < header.size()) {
    if (header.size() - at < 3) {
      return Bad("a TLV at byte " + std::to_string(at) + " is cut short in its type and length");
    }
    const size_t len = size_t{header[at + 1]} << 8 | header[at + 2];
    if (header.size() - at - 3 < len) {
      return Bad("the TLV of type " + Hex(header[at]) + " at byte " + std::to_string(at) +
                 " declares " + std::to_string(len) + " bytes, more than the header has left");
    }
    at += 3 + len;
  }
  return h;
}

}  // namespace sparrow::server
