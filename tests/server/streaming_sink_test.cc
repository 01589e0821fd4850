#include "server/core/streaming_sink.h"

#include <gtest/gtest.h>

#include "engine/model/gguf_file.h"
#include "tests/util/golden.h"
#include "tests/util/test_paths.h"

namespace sparrow::server {
namespace {

class StreamingSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto file = GgufFile::Open(testing::ModelPath("stories260K.gguf"));
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    auto tok = LoadTokenizer(**file);
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    tokenizer_ = std::move(*tok);
    golden_ = testing::LoadGolden(testing::TestdataPath("golden/stories260K.json")).prompts[0];
  }

  // Feeds the golden tokens until the sink says stop; returns the drained text.
  std::string Run(StreamingSink& sink, int* fed) {
    *fed = 0;
    for (int32_t t : golden_.generated_tokens) {
      ++*fed;
      if (!sink.OnToken(TokenEvent{t, -0.5f, {{t, -0.5f}}})) break;
    }
    FinishInfo info;
    info.completion_tokens = *fed;
    sink.OnFinish(info);
    std::vector<StreamChunk> chunks;
    EXPECT_TRUE(sink.Drain(&chunks));
    std::string text;
    for (const auto& c : chunks) text += c.text;
    return text;
  }

  std::unique_ptr<Tokenizer> tokenizer_;
  testing::GoldenPrompt golden_;
};

TEST_F(StreamingSinkTest, AssemblesTheGoldenText) {
  int notified = 0;
  StreamingSink sink(*tokenizer_, {}, nullptr, [&] { ++notified; });
  int fed = 0;
  EXPECT_EQ(Run(sink, &fed), golden_.generated_text_bytes);
  EXPECT_EQ(fed, 48);
  EXPECT_GE(notified, 48);
  EXPECT_EQ(sink.finish_reason(), "stop");
}

TEST_F(StreamingSinkTest, StopStringEndsTheRequestWithoutItsText) {
  StreamingSinkOptions o;
  o.stop = {"Lily"};
  StreamingSink sink(*tokenizer_, o, nullptr, nullptr);
  int fed = 0;
  const std::string text = Run(sink, &fed);
  EXPECT_EQ(text, ", there was a little girl named ");
  EXPECT_LT(fed, 48);
}

TEST_F(StreamingSinkTest, LogprobsArePassedThrough) {
  StreamingSinkOptions o;
  o.logprobs = true;
  StreamingSink sink(*tokenizer_, o, nullptr, nullptr);
  ASSERT_TRUE(sink.OnToken(TokenEvent{432, -0.25f, {{432, -0.25f}, {383, -3.0f}}}));
  std::vector<StreamChunk> chunks;
  EXPECT_FALSE(sink.Drain(&chunks));
  ASSERT_EQ(chunks.size(), 1u);
  ASSERT_EQ(chunks[0].tokens.size(), 1u);
  EXPECT_EQ(chunks[0].tokens[0].token, 432);
  EXPECT_FLOAT_EQ(chunks[0].tokens[0].logprob, -0.25f);
  EXPECT_EQ(chunks[0].tokens[0].top.size(), 2u);
  EXPECT_EQ(chunks[0].tokens[0].piece, std::string(tokenizer_->piece(432)));
}

TEST_F(StreamingSinkTest, OverflowCancelsInsteadOfWaiting) {
  StreamingSinkOptions o;
  o.max_pending_chunks = 4;
  Metrics metrics;
  StreamingSink sink(*tokenizer_, o, &metrics, nullptr);
  for (int i = 0; i < 10; ++i) sink.OnToken(TokenEvent{golden_.generated_tokens[i], 0, {}});
  EXPECT_TRUE(sink.Cancelled());
  EXPECT_TRUE(sink.overflowed());
  std::vector<StreamChunk> chunks;
  sink.Drain(&chunks);
  EXPECT_LE(chunks.size(), 4u);
}

TEST_F(StreamingSinkTest, ByteCapCancelsBeforeTheChunkCap) {
  StreamingSinkOptions o;
  o.max_pending_bytes = 64;  // a few logprob tokens' worth; the chunk cap stays at 1024
  o.logprobs = true;
  StreamingSink sink(*tokenizer_, o, nullptr, nullptr);
  TokenEvent ev{golden_.generated_tokens[0], -0.5f, {{1, -1.0f}, {2, -2.0f}, {3, -3.0f}}};
  for (int i = 0; i < 10; ++i) sink.OnToken(ev);
  EXPECT_TRUE(sink.Cancelled());
  EXPECT_TRUE(sink.overflowed());
  std::vector<StreamChunk> chunks;
  sink.Drain(&chunks);
  EXPECT_LT(chunks.size(), 10u);
}

TEST_F(StreamingSinkTest, CancelIsSeenByTheScheduler) {
  StreamingSink sink(*tokenizer_, {}, nullptr, nullptr);
  EXPECT_FALSE(sink.Cancelled());
  sink.Cancel();
  EXPECT_TRUE(sink.Cancelled());
  EXPECT_TRUE(sink.OnToken(TokenEvent{432, 0, {}}));  // dropped; Cancelled() ends it
  std::vector<StreamChunk> chunks;
  sink.Drain(&chunks);
  EXPECT_TRUE(chunks.empty());
}

TEST_F(StreamingSinkTest, FinishReasonsMapToOpenAiNames) {
  for (auto [reason, name] :
       std::vector<std::pair<FinishReason, std::string>>{{FinishReason::kLength, "length"},
                                                         {FinishReason::kContext, "length"},
                                                         {FinishReason::kCancelled, "cancelled"},
                                                         {FinishReason::kError, "error"}}) {
    StreamingSink sink(*tokenizer_, {}, nullptr, nullptr);
    FinishInfo info;
    info.reason = reason;
    sink.OnFinish(info);
    EXPECT_EQ(sink.finish_reason(), name);
  }
}

}  // namespace
}  // namespace sparrow::server
