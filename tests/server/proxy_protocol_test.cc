// The PROXY protocol v2 parser (server/core/proxy_protocol.h) on good headers and on every kind
// of malformed one, and the trusted-proxy list that decides whose header is read at all.
#include "server/core/proxy_protocol.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "server/core/trusted_proxies.h"

namespace sparrow::server {
namespace {

using Bytes = std::vector<uint8_t>;

const Bytes kSignature = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};

// A header: signature, version/command, family/transport, then `body` with its length.
Bytes Header(uint8_t ver_cmd, uint8_t fam, const Bytes& body) {
  Bytes h = kSignature;
  h.push_back(ver_cmd);
  h.push_back(fam);
  h.push_back(static_cast<uint8_t>(body.size() >> 8));
  h.push_back(static_cast<uint8_t>(body.size() & 0xff));
  h.insert(h.end(), body.begin(), body.end());
  return h;
}

// TCP over IPv4 from 192.0.2.7:40000 to 10.0.0.1:8080, then `tlvs`.
Bytes Tcp4(const Bytes& tlvs = {}) {
  Bytes body = {192, 0, 2, 7, 10, 0, 0, 1, 0x9c, 0x40, 0x1f, 0x90};
  body.insert(body.end(), tlvs.begin(), tlvs.end());
  return Header(0x21, 0x11, body);
}

Result<ProxyV2Header> Parse(const Bytes& b) {
  return ParseProxyV2(b);
}

std::string ErrorOf(const Bytes& b) {
  const auto r = Parse(b);
  return r.ok() ? "" : r.status().message();
}

TEST(ProxyProtocolTest, ReadsTheSourceOfTcpOverIpv4) {
  const auto h = Parse(Tcp4());
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_FALSE(h->local);
  ASSERT_TRUE(h->source.has_value());
  EXPECT_EQ(h->source->ToString(), "192.0.2.7");
  EXPECT_EQ(h->source_port, 40000);
  EXPECT_EQ(*ProxyV2RemainingBytes(Tcp4()), 12u);
}

TEST(ProxyProtocolTest, ReadsTheSourceOfTcpOverIpv6) {
  Bytes body(36, 0);
  body[0] = 0x20;
  body[1] = 0x01;
  body[2] = 0x0d;
  body[3] = 0xb8;
  body[15] = 0x05;  // 2001:db8::5
  body[32] = 0x01;
  body[33] = 0xbb;  // port 443
  const auto h = Parse(Header(0x21, 0x21, body));
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->source->ToString(), "2001:db8::5");
  EXPECT_EQ(h->source_port, 443);
}

TEST(ProxyProtocolTest, LocalIsTheBalancersOwnConnection) {
  // HAProxy's health checks: LOCAL, family UNSPEC, no addresses.
  const auto h = Parse(Header(0x20, 0x00, {}));
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_TRUE(h->local);
  EXPECT_FALSE(h->source.has_value());
}

TEST(ProxyProtocolTest, TlvsThatFillTheRestAreSkipped) {
  // PP2_TYPE_ALPN "h2" and PP2_TYPE_NOOP with no value.
  const auto h = Parse(Tcp4({0x01, 0x00, 0x02, 'h', '2', 0x04, 0x00, 0x00}));
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->source->ToString(), "192.0.2.7");
}

TEST(ProxyProtocolTest, MalformedHeadersAreRefusedWithTheReason) {
  Bytes sig = Tcp4();
  sig[7] = 'X';
  EXPECT_NE(ErrorOf(sig).find("signature"), std::string::npos);
  EXPECT_NE(ErrorOf(Header(0x11, 0x11, Tcp4())).find("version 1"), std::string::npos);
  EXPECT_NE(ErrorOf(Header(0x22, 0x11, Bytes(12))).find("command 2"), std::string::npos);
  EXPECT_NE(ErrorOf(Header(0x2f, 0x11, Bytes(12))).find("command 15"), std::string::npos);
  EXPECT_NE(ErrorOf(Header(0x21, 0x12, Bytes(12))).find("0x12"), std::string::npos) << "UDP";
  EXPECT_NE(ErrorOf(Header(0x21, 0x31, Bytes(216))).find("0x31"), std::string::npos) << "UNIX";
  EXPECT_NE(ErrorOf(Header(0x21, 0x00, {})).find("0x00"), std::string::npos) << "PROXY, UNSPEC";
  EXPECT_NE(ErrorOf(Header(0x21, 0x11, Bytes(11))).find("address block"), std::string::npos);
  EXPECT_NE(ErrorOf(Header(0x21, 0x21, Bytes(35))).find("36-byte"), std::string::npos);
  // Longer than the bound: refused from the fixed part alone, before anything is read.
  const Bytes huge = Header(0x21, 0x11, Bytes(kProxyV2MaxBytes));
  EXPECT_NE(ErrorOf(huge).find("at most"), std::string::npos);
  EXPECT_FALSE(ProxyV2RemainingBytes({huge.data(), kProxyV2FixedBytes}).ok());
  const Bytes widest = Header(0x21, 0x11, Bytes(kProxyV2MaxBytes - kProxyV2FixedBytes - 12));
  EXPECT_TRUE(Parse(widest).ok()) << ErrorOf(widest);  // no TLVs: all zero bytes are NOOP...
}

TEST(ProxyProtocolTest, TlvsThatDoNotFitAreRefused) {
  // Two bytes left: no room for a type and a length.
  EXPECT_NE(ErrorOf(Tcp4({0x04, 0x00})).find("cut short"), std::string::npos);
  // A length past the end of the header.
  EXPECT_NE(ErrorOf(Tcp4({0x01, 0x00, 0x05, 'h', '2'})).find("declares 5"), std::string::npos);
  EXPECT_NE(ErrorOf(Tcp4({0x01, 0xff, 0xff})).find("more than the header has left"),
            std::string::npos);
}

TEST(ProxyProtocolTest, EveryTruncationAndExtensionIsRefused) {
  const Bytes good = Tcp4({0x01, 0x00, 0x02, 'h', '2'});
  for (size_t n = 0; n < good.size(); ++n) {
    SCOPED_TRACE(n);
    EXPECT_FALSE(Parse(Bytes(good.begin(), good.begin() + static_cast<long>(n))).ok());
  }
  Bytes longer = good;
  longer.push_back(0);
  EXPECT_NE(ErrorOf(longer).find("bytes given"), std::string::npos);
}

TEST(ProxyProtocolTest, RandomBytesNeverCrashAndRarelyParse) {
  // Random headers with a valid signature: each either parses (and then names an address or is
  // LOCAL) or is refused; none reads past what it was given (ASan builds check that).
  std::mt19937 rng(41);
  int parsed = 0;
  for (int i = 0; i < 20000; ++i) {
    Bytes b = kSignature;
    const size_t n = 4 + rng() % 64;
    for (size_t j = 0; j < n; ++j) b.push_back(static_cast<uint8_t>(rng()));
    if (i % 2 == 0) {  // a plausible length half of the time
      b[14] = 0;
      b[15] = static_cast<uint8_t>(n - 4);
    }
    const auto h = Parse(b);
    if (!h.ok()) continue;
    ++parsed;
    EXPECT_TRUE(h->local || h->source.has_value());
  }
  EXPECT_LT(parsed, 20000);
}

TEST(TrustedProxiesTest, ParsesCidrListsAndRefusesBadEntries) {
  const auto t = TrustedProxies::Parse(" 10.0.0.0/8, 192.0.2.7 ,fd00::/8", "trusted_proxy");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_TRUE(t->Contains("10.200.3.4"));
  EXPECT_TRUE(t->Contains("::ffff:10.1.2.3")) << "a dual-stack socket's form of IPv4";
  EXPECT_TRUE(t->Contains("192.0.2.7"));
  EXPECT_FALSE(t->Contains("192.0.2.8"));
  EXPECT_TRUE(t->Contains("fd12::1"));
  EXPECT_FALSE(t->Contains("fe80::1"));
  EXPECT_FALSE(t->Contains("11.0.0.1"));
  EXPECT_FALSE(t->Contains("not-an-address"));
  EXPECT_TRUE(TrustedProxies::Parse("", "trusted_proxy")->empty());
  EXPECT_TRUE(TrustedProxies::Parse("0.0.0.0/0", "x")->Contains("203.0.113.9"));
  EXPECT_FALSE(TrustedProxies::Parse("0.0.0.0/0", "x")->Contains("2001:db8::1"));
  for (const char* bad : {"10.0.0.0/33", "fd00::/129", "10.0.0.0/-1", "10.0.0.0/8x", "10.0.0/8",
                          "proxy.lan", "10.0.0.0/", "/8"}) {
    SCOPED_TRACE(bad);
    const auto r = TrustedProxies::Parse(std::string("127.0.0.1,") + bad, "trusted_proxy");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("trusted_proxy"), std::string::npos);
    EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().message();
  }
}

TEST(TrustedProxiesTest, XForwardedForIsBelievedFromTrustedPeersOnly) {
  const auto t = *TrustedProxies::Parse("10.0.0.0/8", "trusted_proxy");
  EXPECT_EQ(t.ClientOf("10.0.0.5", "198.51.100.1"), "198.51.100.1");
  EXPECT_EQ(t.ClientOf("192.0.2.1", "198.51.100.1"), "192.0.2.1") << "an untrusted peer";
  // The rightmost untrusted hop: what the client wrote itself (left of it) is not believed.
  EXPECT_EQ(t.ClientOf("10.0.0.5", "1.2.3.4, 198.51.100.1, 10.0.0.9"), "198.51.100.1");
  EXPECT_EQ(t.ClientOf("10.0.0.5", "garbage, 198.51.100.1"), "198.51.100.1");
  EXPECT_EQ(t.ClientOf("10.0.0.5", "198.51.100.1, garbage"), "10.0.0.5");
  EXPECT_EQ(t.ClientOf("10.0.0.5", "10.0.0.7, 10.0.0.9"), "10.0.0.7");
  EXPECT_EQ(t.ClientOf("10.0.0.5", ""), "10.0.0.5");
  EXPECT_EQ(t.ClientOf("10.0.0.5", "::ffff:198.51.100.2"), "198.51.100.2");
}

}  // namespace
}  // namespace sparrow::server
