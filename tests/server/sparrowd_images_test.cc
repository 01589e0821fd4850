// Images in chat on the real sparrowd (loopback, stories260K, which has no vision encoder):
// every image is decoded on the preparation pool and each kind of bad one gets its own 400
// naming the part; a good one gets the 400 that the model does not take images (--mmproj); the
// server serves text chats all along.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "api/openai/base64.h"
#include "tests/util/image_files.h"
#include "tests/util/sparrowd_process.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using json = nlohmann::json;
using testing::SparrowdProcess;

std::string DataUrl(const std::string& file) {
  return "data:image/png;base64," + openai::Base64Encode(file);
}

json ImagePart(const std::string& url) {
  return {{"type", "image_url"}, {"image_url", {{"url", url}}}};
}

// A chat whose user message is "What is this?" and then the image parts.
std::pair<int, json> Chat(const SparrowdProcess& s, const std::vector<json>& images) {
  json parts = json::array({{{"type", "text"}, {"text", "What is this?"}}});
  for (const auto& p : images) parts.push_back(p);
  auto [status, body] = testing::PostJsonHttp10(
      s.http_port(), "/v1/chat/completions",
      json{{"messages", {{{"role", "user"}, {"content", parts}}}}, {"max_tokens", 2}}.dump());
  return {status, json::parse(body, nullptr, false)};
}

// Expects a 400 whose message has `needle` and whose param is `param`.
void Expect400(const std::pair<int, json>& reply, const std::string& needle,
               const std::string& param) {
  EXPECT_EQ(reply.first, 400) << reply.second.dump();
  const json& e = reply.second["error"];
  ASSERT_TRUE(e.is_object()) << reply.second.dump();
  EXPECT_NE(e.value("message", "").find(needle), std::string::npos) << e.dump();
  EXPECT_EQ(e.value("param", ""), param) << e.dump();
  EXPECT_EQ(e.value("type", ""), "invalid_request_error") << e.dump();
}

TEST(SparrowdImagesTest, EachBadImageHasItsOwn400AndAGoodOneNeedsAnEncoder) {
  SparrowdProcess::Options o;
  o.args = {"--model",     testing::ModelPath("stories260K.gguf"),
            "--port",      "0",
            "--threads",   "1",
            "--grpc-port", "-1"};
  std::string error;
  auto s = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  ASSERT_NE(s, nullptr) << error;

  testing::PngSpec spec;
  spec.width = 4;
  spec.height = 3;
  spec.samples.assign(4 * 3 * 3, 200);
  const std::string png = testing::EncodePng(spec);

  auto good = Chat(*s, {ImagePart(DataUrl(png))});
  Expect400(good, "does not take images", "messages[0].content[1]");
  EXPECT_NE(good.second["error"].value("message", "").find("--mmproj"), std::string::npos);
  EXPECT_EQ(good.second["error"]["code"], "model_not_supported");

  Expect400(Chat(*s, {ImagePart(DataUrl(png)), ImagePart(DataUrl(png.substr(0, 40)))}),
            "'messages[0].content[2]': the PNG is truncated or corrupt", "messages[0].content[2]");
  Expect400(Chat(*s, {ImagePart(DataUrl("GIF89a\x01\0\x01\0"))}), "the data is a GIF image",
            "messages[0].content[1]");
  Expect400(Chat(*s, {ImagePart(DataUrl(testing::WithPngSize(png, 30000, 30000)))}),
            "the PNG is 30000 x 30000 pixels (900000000), more than the limit of 16777216 pixels",
            "messages[0].content[1]");
  Expect400(Chat(*s, {ImagePart("https://example.com/cat.png")}),
            "remote image URLs are not fetched; send the image as a data: URL",
            "messages[0].content[1]");
  Expect400(Chat(*s, {ImagePart("data:image/png;base64,%%%")}), "is not base64",
            "messages[0].content[1]");
  std::vector<json> many;
  for (int i = 0; i < 17; ++i) many.push_back(ImagePart(DataUrl(png)));
  Expect400(Chat(*s, many), "a request may carry at most 16 images", "messages[0].content[17]");

  // Text chats are served all along.
  auto [status, body] = testing::PostJsonHttp10(
      s->http_port(), "/v1/chat/completions",
      json{{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 2}}.dump());
  EXPECT_EQ(status, 200) << body;
}

}  // namespace
}  // namespace sparrow
