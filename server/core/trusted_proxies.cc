#include "server/core/trusted_proxies.h"

#include <arpa/inet.h>

#include <charconv>
#include <cstring>

namespace sparrow::server {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool PrefixEquals(const IpAddress& a, const IpAddress& b, int bits) {
  const int whole = bits / 8;
  if (std::memcmp(a.bytes.data(), b.bytes.data(), static_cast<size_t>(whole)) != 0) return false;
  if (bits % 8 == 0) return true;
  const uint8_t mask = static_cast<uint8_t>(0xff << (8 - bits % 8));
  return (a.bytes[whole] & mask) == (b.bytes[whole] & mask);
}

}  // namespace

bool IpAddress::v4() const {
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(bytes.data(), kMapped, 12) == 0;
}

IpAddress IpAddress::FromV4(const uint8_t (&b)[4]) {
  IpAddress a;
  a.bytes[10] = a.bytes[11] = 0xff;
  std::memcpy(a.bytes.data() + 12, b, 4);
  return a;
}

IpAddress IpAddress::FromV6(const uint8_t (&b)[16]) {
  IpAddress a;
  std::memcpy(a.bytes.data(), b, 16);
  return a;
}

std::optional<IpAddress> IpAddress::Parse(std::string_view text) {
  if (text.empty() || text.size() > INET6_ADDRSTRLEN) return std::nullopt;
  const std::string s(text);
  uint8_t v4[4];
  if (inet_pton(AF_INET, s.c_str(), v4) == 1) return FromV4(v4);
  uint8_t v6[16];
  if (inet_pton(AF_INET6, s.c_str(), v6) == 1) return FromV6(v6);
  return std::nullopt;
}

std::string IpAddress::ToString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (v4()) {
    inet_ntop(AF_INET, bytes.data() + 12, buf, sizeof buf);
  } else {
    inet_ntop(AF_INET6, bytes.data(), buf, sizeof buf);
  }
  return buf;
}

Result<TrustedProxies> TrustedProxies::Parse(std::string_view list, std::string_view setting) {
  TrustedProxies t;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view entry = Trim(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (entry.empty()) continue;
    const auto fail = [&](const std::string& why) {
      return InvalidArgument(std::string(setting) + ": '" + std::string(entry) + "' " + why);
    };
    const size_t slash = entry.find('/');
    const auto addr = IpAddress::Parse(entry.substr(0, slash));
    if (!addr) return fail("is not an IP address or CIDR range (10.0.0.0/8, fd00::/8)");
    Range r{*addr, 128};
    const int max_bits = addr->v4() ? 32 : 128;
    if (slash != std::string_view::npos) {
      const std::string_view bits = entry.substr(slash + 1);
      int n = -1;
      const auto [end, ec] = std::from_chars(bits.data(), bits.data() + bits.size(), n);
      if (ec != std::errc() || end != bits.data() + bits.size() || n < 0 || n > max_bits) {
        return fail("has a prefix length that is not 0.." + std::to_string(max_bits));
      }
      r.prefix_bits = addr->v4() ? 96 + n : n;
    }
    t.ranges_.push_back(r);
  }
  return t;
}

bool TrustedProxies::Contains(const IpAddress& a) const {
  for (const Range& r : ranges_) {
    if (PrefixEquals(a, r.base, r.prefix_bits)) return true;
  }
  return false;
}

bool TrustedProxies::Contains(std::string_view address) const {
  const auto a = IpAddress::Parse(address);
  return a && Contains(*a);
}

std::string TrustedProxies::ClientOf(const std::string& peer,
                                     std::string_view x_forwarded_for) const {
  if (x_forwarded_for.empty() || !Contains(peer)) return peer;
  std::string_view rest = x_forwarded_for;
  std::optional<IpAddress> leftmost;
  while (!rest.empty()) {
    const size_t comma = rest.rfind(',');
    const std::string_view entry =
        Trim(comma == std::string_view::npos ? rest : rest.substr(comma + 1));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(0, comma);
    const auto a = IpAddress::Parse(entry);
    if (!a) return peer;  // not an address: believe nothing further left either
    if (!Contains(*a)) return a->ToString();
    leftmost = a;
  }
  // Every hop is a trusted proxy: the leftmost is the client (a proxy's own request).
  return leftmost ? leftmost->ToString() : peer;
}

}  // namespace sparrow::server
