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

// A step's token count is summed from the wire (each segment below 2^31): refused past
// kMaxStepTokens before a hidden state of that many rows is allocated.
TEST(ShardWireTest, AStepOfTooManyTokensIsRefusedBeforeItsHiddenState) {
  shardpb::Step step;
  auto* a = step.add_segments();
  for (int64_t i = 0; i < kMaxStepTokens; ++i) a->add_tokens(1);
  DecodedStep d;
  ASSERT_TRUE(DecodeStep(step, &d).ok());
  EXPECT_EQ(d.tokens, static_cast<size_t>(kMaxStepTokens));
  step.add_segments()->add_tokens(1);
  const Status st = DecodeStep(step, &d);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("more than 65536 tokens"), std::string::npos) << st.message();
  step.mutable_segments(0)->clear_tokens();
  step.add_ops();  // neither a copy nor a resize
  EXPECT_EQ(DecodeStep(step, &d).code(), StatusCode::kInvalidArgument);
}

// A value count whose byte size wraps size_t is refused, not compared after the wrap.
TEST(ShardWireTest, AHiddenSizeThatWouldWrapIsRefused) {
  std::vector<float> out(1);
  const size_t wraps = (SIZE_MAX / 4) + 2;  // * 4 wraps to 4
  const std::string four(4, '\0');
  EXPECT_FALSE(DecodeHidden(four, shardpb::ENCODING_F32, wraps, out).ok());
  EXPECT_FALSE(DecodeHidden(four, shardpb::ENCODING_F16, SIZE_MAX / 2 + 3, out).ok());
}

// shard_wire_fuzz's first find: an empty state was copied from a null pointer (UB).
TEST(ShardWireTest, AnEmptyHiddenStateDecodesToNothing) {
  for (auto e : {shardpb::ENCODING_F32, shardpb::ENCODING_F16, shardpb::ENCODING_Q8_0}) {
    EXPECT_TRUE(DecodeHidden("", e, 0, std::span<float>()).ok());
  }
}

TEST(ShardWireTest, TheLargestMessageFitsTheModelAndStaysUnderAGibibyte) {
  EXPECT_EQ(ShardMaxMessageBytes(64), (16 << 20) + (64 << 20));
  EXPECT_EQ(ShardMaxMessageBytes(4096), 1 << 30);
  EXPECT_EQ(ShardMaxMessageBytes(int64_t{1} << 40), 1 << 30);
  EXPECT_GE(ShardMaxMessageBytes(1), 17 << 20);  // Echo's replies
}

}  // namespace
}  // namespace sparrow::server
