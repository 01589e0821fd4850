#include "server/grpc/grpc_request.h"

#include <gtest/gtest.h>

#include "engine/model/gguf_file.h"
#include "tests/util/test_paths.h"

namespace sparrow::server {
namespace {

using ::sparrow::testing::ModelPath;

TEST(ParseGenerateOptionsTest, UnsetFieldsTakeDefaults) {
  SamplingParams defaults;
  defaults.temperature = 0.5f;
  auto s = ParseGenerateOptions(v1::GenerateOptions(), defaults, 77);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->sampling.temperature, 0.5f);
  EXPECT_EQ(s->sampling.top_k, defaults.top_k);
  EXPECT_EQ(s->max_tokens, 77);
  EXPECT_TRUE(s->stop.empty());
}

TEST(ParseGenerateOptionsTest, SetFieldsOverride) {
  v1::GenerateOptions o;
  o.mutable_sampling()->set_temperature(0);
  o.mutable_sampling()->set_top_k(0);
  o.mutable_sampling()->set_seed(42);
  o.mutable_sampling()->set_min_p(0);
  o.set_max_tokens(5);
  o.add_stop("\n\n");
  o.set_logprobs(true);
  auto s = ParseGenerateOptions(o, SamplingParams{}, 128);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->sampling.temperature, 0.0f);
  EXPECT_EQ(s->sampling.top_k, 0);
  EXPECT_EQ(s->sampling.seed, 42u);
  EXPECT_EQ(s->sampling.min_p, 0.0f);
  EXPECT_EQ(s->max_tokens, 5);
  ASSERT_EQ(s->stop.size(), 1u);
  EXPECT_EQ(s->stop[0], "\n\n");
  EXPECT_TRUE(s->logprobs);
}

// Each bad value is refused with InvalidArgument naming its field.
TEST(ParseGenerateOptionsTest, BadValuesNameTheField) {
  struct Case {
    std::function<void(v1::GenerateOptions*)> set;
    std::string field;
  };
  const std::vector<Case> cases = {
      {[](v1::GenerateOptions* o) { o->mutable_sampling()->set_temperature(-1); },
       "options.sampling.temperature"},
      {[](v1::GenerateOptions* o) { o->mutable_sampling()->set_top_p(0); },
       "options.sampling.top_p"},
      {[](v1::GenerateOptions* o) { o->mutable_sampling()->set_top_k(-3); },
       "options.sampling.top_k"},
      {[](v1::GenerateOptions* o) { o->mutable_sampling()->set_min_p(2); },
       "options.sampling.min_p"},
      {[](v1::GenerateOptions* o) { o->mutable_sampling()->set_presence_penalty(5); },
       "options.sampling.presence_penalty"},
      {[](v1::GenerateOptions* o) { o->set_max_tokens(0); }, "options.max_tokens"},
      {[](v1::GenerateOptions* o) { o->add_stop(""); }, "options.stop[0]"},
      {[](v1::GenerateOptions* o) { o->add_stop(std::string(300, 'x')); }, "options.stop[0]"},
      {[](v1::GenerateOptions* o) {
         for (int i = 0; i < 9; ++i) o->add_stop("s");
       },
       "options.stop"},
  };
  for (const Case& c : cases) {
    v1::GenerateOptions o;
    c.set(&o);
    auto s = ParseGenerateOptions(o, SamplingParams{}, 16);
    ASSERT_FALSE(s.ok()) << c.field;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << c.field;
    EXPECT_NE(s.status().message().find(c.field), std::string::npos) << s.status().message();
  }
}

class PromptTokensTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto file = GgufFile::Open(ModelPath("stories260K.gguf"));
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    auto tok = LoadTokenizer(**file);
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    tok_ = std::move(*tok);
  }
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(PromptTokensTest, TextIsTokenizedWithBos) {
  v1::GenerateRequest r;
  r.set_prompt("Once upon a time");
  auto ids = PromptTokens(r, *tok_);
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_EQ(*ids, (std::vector<int32_t>{1, 403, 407, 261, 378}));
  r.set_add_special(false);
  ids = PromptTokens(r, *tok_);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{403, 407, 261, 378}));
}

TEST_F(PromptTokensTest, IdsAreUsedAsGiven) {
  v1::GenerateRequest r;
  r.add_prompt_tokens(1);
  r.add_prompt_tokens(403);
  auto ids = PromptTokens(r, *tok_);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{1, 403}));
}

TEST_F(PromptTokensTest, RefusesBadPrompts) {
  v1::GenerateRequest none;
  EXPECT_EQ(PromptTokens(none, *tok_).status().code(), StatusCode::kInvalidArgument);

  v1::GenerateRequest both;
  both.set_prompt("x");
  both.add_prompt_tokens(1);
  auto s = PromptTokens(both, *tok_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("prompt_tokens"), std::string::npos);

  v1::GenerateRequest out_of_range;
  out_of_range.add_prompt_tokens(1);
  out_of_range.add_prompt_tokens(512);
  s = PromptTokens(out_of_range, *tok_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("prompt_tokens[1] is 512"), std::string::npos)
      << s.status().message();
}

TEST(ChatMessagesTest, NeedsMessagesWithRoles) {
  v1::ChatRequest r;
  auto m = ChatMessages(r);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("messages"), std::string::npos);
  r.add_messages()->set_content("hi");
  m = ChatMessages(r);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("messages[0].role"), std::string::npos);
  r.mutable_messages(0)->set_role("user");
  m = ChatMessages(r);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)[0].role, "user");
  EXPECT_EQ((*m)[0].content, "hi");
}

TEST(CheckModelTest, EmptyOrServedIdIsAccepted) {
  EXPECT_TRUE(CheckModel("", "stories260K").ok());
  EXPECT_TRUE(CheckModel("stories260K", "stories260K").ok());
  Status s = CheckModel("gpt-4", "stories260K");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("gpt-4"), std::string::npos);
}

}  // namespace
}  // namespace sparrow::server
