// The hidden state on the wire: f32 exact, f16 and q8_0 within their rounding, and every size or
// encoding the network could get wrong refused with the numbers.
#include "server/shard/shard_wire.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace sparrow::server {
namespace {

std::vector<float> Hidden(size_t n) {
  std::vector<float> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = std::sin(0.37f * static_cast<float>(i)) * (1 + i % 7);
  return h;
}

std::vector<float> RoundTrip(const std::vector<float>& h, shardpb::Encoding e, size_t* bytes) {
  std::string wire;
  EncodeHidden(h, e, &wire);
  *bytes = wire.size();
  std::vector<float> out(h.size());
  const Status st = DecodeHidden(wire, e, h.size(), out);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

TEST(ShardWireTest, EachEncodingRoundTripsWithinItsRounding) {
  const std::vector<float> h = Hidden(256);
  size_t bytes = 0;
  EXPECT_EQ(RoundTrip(h, shardpb::ENCODING_F32, &bytes), h);
  EXPECT_EQ(bytes, 256u * 4);
  const std::vector<float> f16 = RoundTrip(h, shardpb::ENCODING_F16, &bytes);
  EXPECT_EQ(bytes, 256u * 2);
  for (size_t i = 0; i < h.size(); ++i) EXPECT_NEAR(f16[i], h[i], std::fabs(h[i]) / 1024 + 1e-6);
  const std::vector<float> q8 = RoundTrip(h, shardpb::ENCODING_Q8_0, &bytes);
  EXPECT_EQ(bytes, 256u / 32 * 34);
  for (size_t b = 0; b < h.size(); b += 32) {
    float amax = 0;
    for (size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(h[i]));
    // Half a step of 127 levels, plus the f16 scale's rounding.
    for (size_t i = b; i < b + 32; ++i) EXPECT_NEAR(q8[i], h[i], amax / 127 * 0.51f + amax / 1024);
  }
}

TEST(ShardWireTest, WrongSizesAndEncodingsAreRefused) {
  std::vector<float> out(64);
  std::string wire(64 * 4 - 1, '\0');
  Status st = DecodeHidden(wire, shardpb::ENCODING_F32, 64, out);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("255 bytes where 256 bytes for 64 values"), std::string::npos)
      << st.message();
  wire.assign(68, '\0');
  EXPECT_TRUE(DecodeHidden(wire, shardpb::ENCODING_Q8_0, 64, out).ok());
  std::vector<float> odd(48);
  st = DecodeHidden(std::string(51, '\0'), shardpb::ENCODING_Q8_0, 48, odd);
  EXPECT_NE(st.message().find("not a multiple of 32"), std::string::npos) << st.message();
  st = DecodeHidden(wire, static_cast<shardpb::Encoding>(9), 64, out);
  EXPECT_NE(st.message().find("encoding 9 is unknown"), std::string::npos) << st.message();
  EXPECT_TRUE(ParseShardEncoding("q8_0").ok());
  auto bad = ParseShardEncoding("int4");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("f32, f16 or q8_0, got 'int4'"), std::string::npos);
}

// shard_encoding auto: exact on a gigabit LAN, compact below it.
TEST(ShardWireTest, AutoPicksTheEncodingFromTheLink) {
  EXPECT_EQ(EncodingForLink(2900, 4096), shardpb::ENCODING_F32);
  EXPECT_EQ(EncodingForLink(1000, 4096), shardpb::ENCODING_F32);
  EXPECT_EQ(EncodingForLink(300, 4096), shardpb::ENCODING_Q8_0);
  EXPECT_EQ(EncodingForLink(300, 100), shardpb::ENCODING_F16);  // not whole q8_0 blocks
  EXPECT_EQ(EncodingName(shardpb::ENCODING_Q8_0), "q8_0");
}

}  // namespace
}  // namespace sparrow::server
