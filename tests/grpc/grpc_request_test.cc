#include "server/grpc/grpc_request.h"

#include <gtest/gtest.h>

#include <functional>

namespace sparrow::server {
namespace {

TEST(ParseGenerateOptionsTest, UnsetFieldsTakeDefaults) {
  SamplingParams defaults;
  defaults.temperature = 0.5f;
  auto s = ParseGenerateOptions(v1::GenerateOptions(), defaults);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->sampling.temperature, 0.5f);
  EXPECT_EQ(s->sampling.top_k, defaults.top_k);
  EXPECT_FALSE(s->max_tokens.has_value());
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
  o.set_prediction("the answer expected");
  auto s = ParseGenerateOptions(o, SamplingParams{});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->sampling.temperature, 0.0f);
  EXPECT_EQ(s->sampling.top_k, 0);
  EXPECT_EQ(s->sampling.seed, 42u);
  EXPECT_EQ(s->sampling.min_p, 0.0f);
  EXPECT_EQ(s->max_tokens, 5);
  ASSERT_EQ(s->stop.size(), 1u);
  EXPECT_EQ(s->stop[0], "\n\n");
  EXPECT_TRUE(s->logprobs);
  EXPECT_EQ(s->prediction, "the answer expected");
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
  };
  for (const Case& c : cases) {
    v1::GenerateOptions o;
    c.set(&o);
    auto s = ParseGenerateOptions(o, SamplingParams{});
    ASSERT_FALSE(s.ok()) << c.field;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << c.field;
    EXPECT_NE(s.status().message().find(c.field), std::string::npos) << s.status().message();
  }
}

TEST(GenerateSpecTest, TextOrIdsExactlyOne) {
  v1::GenerateRequest r;
  r.set_prompt("Once upon a time");
  r.set_add_special(false);
  r.set_parse_special(true);
  auto spec = GenerateSpec(r);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->kind, PromptKind::kText);
  EXPECT_EQ(spec->text, "Once upon a time");
  EXPECT_FALSE(spec->add_special);
  EXPECT_TRUE(spec->parse_special);
  EXPECT_EQ(spec->default_max_tokens, kDefaultGrpcMaxTokens);
  EXPECT_EQ(spec->fields.max_tokens, "options.max_tokens");

  v1::GenerateRequest ids;
  ids.add_prompt_tokens(1);
  ids.add_prompt_tokens(403);
  spec = GenerateSpec(ids);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->kind, PromptKind::kTokens);
  EXPECT_EQ(spec->tokens, (std::vector<int32_t>{1, 403}));
  EXPECT_EQ(spec->fields.prompt, "prompt_tokens");

  EXPECT_EQ(GenerateSpec(v1::GenerateRequest()).status().code(), StatusCode::kInvalidArgument);
  v1::GenerateRequest both = ids;
  both.set_prompt("x");
  auto s = GenerateSpec(both);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("prompt_tokens"), std::string::npos);
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

}  // namespace
}  // namespace sparrow::server

namespace sparrow::server {
namespace {

v1::ChatRequest ToolChat() {
  v1::ChatRequest r;
  r.add_messages()->set_role("user");
  r.mutable_messages(0)->set_content("Weather?");
  v1::ChatMessage* call = r.add_messages();
  call->set_role("assistant");
  v1::ToolCall* c = call->add_tool_calls();
  c->set_id("call_1");
  c->set_name("get_weather");
  c->set_arguments(R"({"city": "Oslo"})");
  v1::ChatMessage* result = r.add_messages();
  result->set_role("tool");
  result->set_tool_call_id("call_1");
  result->set_content("3 C");
  v1::Tool* t = r.add_tools();
  t->set_name("get_weather");
  t->set_parameters_json(R"({"type": "object"})");
  return r;
}

TEST(ChatSpecToolsTest, CarriesToolsCallsAndSwitches) {
  v1::ChatRequest r = ToolChat();
  r.set_tool_choice_function("get_weather");
  r.set_parallel_tool_calls(false);
  r.set_reasoning_format("none");
  r.set_enable_thinking(false);
  (*r.mutable_options()->mutable_logit_bias())[7] = -100;
  auto spec = ChatSpec(r);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->messages.size(), 3u);
  EXPECT_EQ(spec->messages[1].tool_calls[0].arguments, R"({"city": "Oslo"})");
  EXPECT_EQ(spec->messages[2].tool_call_id, "call_1");
  ASSERT_EQ(spec->tools.size(), 1u);
  EXPECT_EQ(spec->tools[0].parameters, (nlohmann::json{{"type", "object"}}));
  EXPECT_EQ(spec->tool_choice, ToolChoice::kFunction);
  EXPECT_FALSE(spec->parallel_tool_calls);
  EXPECT_EQ(spec->reasoning_format, ReasoningFormat::kNone);
  EXPECT_EQ(spec->enable_thinking, false);
  ASSERT_EQ(spec->logit_bias.size(), 1u);
}

TEST(ChatSpecToolsTest, MistakesNameTheirField) {
  const std::vector<std::pair<std::function<void(v1::ChatRequest*)>, std::string>> cases = {
      {[](v1::ChatRequest* r) { r->mutable_tools(0)->set_name("no spaces"); }, "tools[0].name"},
      {[](v1::ChatRequest* r) { r->mutable_tools(0)->set_parameters_json("[]"); },
       "tools[0].parameters_json"},
      {[](v1::ChatRequest* r) { r->add_tools()->set_name("get_weather"); }, "tools[1].name"},
      {[](v1::ChatRequest* r) {
         r->mutable_messages(1)->mutable_tool_calls(0)->set_arguments("x");
       },
       "messages[1].tool_calls[0].arguments"},
      {[](v1::ChatRequest* r) { r->mutable_messages(2)->clear_tool_call_id(); },
       "messages[2].tool_call_id"},
      {[](v1::ChatRequest* r) { r->set_tool_choice("sometimes"); }, "tool_choice"},
      {[](v1::ChatRequest* r) { r->set_reasoning_format("loud"); }, "reasoning_format"},
  };
  for (const auto& [mutate, field] : cases) {
    v1::ChatRequest r = ToolChat();
    mutate(&r);
    auto spec = ChatSpec(r);
    ASSERT_FALSE(spec.ok()) << field;
    EXPECT_NE(spec.status().message().find(field), std::string::npos) << spec.status().ToString();
  }
}

}  // namespace
}  // namespace sparrow::server

namespace sparrow::server {
namespace {

TEST(ChatImagesTest, ImagesKeepTheirMessageAndOffsetAndAreBounded) {
  v1::ChatRequest r;
  v1::ChatMessage* m = r.add_messages();
  m->set_role("system");
  m->set_content("Be brief.");
  m = r.add_messages();
  m->set_role("user");
  m->set_content("Compare  with ");
  m->add_images()->set_data("first");
  m->mutable_images(0)->set_offset(8);
  m->add_images()->set_data("second");
  m->mutable_images(1)->set_offset(14);
  auto images = ChatImages(r);
  ASSERT_TRUE(images.ok()) << images.status().ToString();
  ASSERT_EQ(images->size(), 2u);
  EXPECT_EQ((*images)[0].bytes, "first");
  EXPECT_EQ((*images)[0].message, 1u);
  EXPECT_EQ((*images)[0].offset, 8u);
  EXPECT_EQ((*images)[1].field, "messages[1].images[1]");

  v1::ChatRequest late = r;
  late.mutable_messages(1)->mutable_images(1)->set_offset(15);
  EXPECT_EQ(ChatImages(late).status().message(),
            "'messages[1].images[1]' has offset 15; expected 8 to 14 (within the content, after "
            "the image before it)");
  v1::ChatRequest system = r;
  system.mutable_messages(0)->add_images()->set_data("x");
  EXPECT_EQ(ChatImages(system).status().message(),
            "'messages[0].images[0]' is an image in a message of role 'system': only user "
            "messages take images");
  v1::ChatRequest many = r;
  for (int i = 0; i < 15; ++i) many.mutable_messages(1)->add_images()->set_offset(14);
  EXPECT_EQ(ChatImages(many).status().message(),
            "'messages[1].images[16]' is one image too many: a request may carry at most 16 "
            "images");
  // ChatSpec carries them to ResolveGeneration, which decodes them.
  auto spec = ChatSpec(r);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->images.size(), 2u);
}

}  // namespace
}  // namespace sparrow::server
