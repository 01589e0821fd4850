// Images in chat on the real sparrowd (loopback, stories260K, which has no vision encoder):
// every image is decoded on the preparation pool and each kind of bad one gets its own 400
// naming the part; a good one gets the 400 that the model does not take images (--mmproj); the
// server serves text chats all along. With --mmproj (the synthetic gemma3 projector made as wide
// as stories260K) the encoder loads, and a projector of another width stops the start.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/openai/base64.h"
#include "tests/util/image_files.h"
#include "tests/util/sparrowd_process.h"
#include "tests/util/synthetic_projector.h"
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

// sparrowd on stories260K, HTTP only, with `extra` flags.
std::unique_ptr<SparrowdProcess> StartOnStories(std::vector<std::string> extra = {}) {
  SparrowdProcess::Options o;
  o.args = {"--model",     testing::ModelPath("stories260K.gguf"),
            "--port",      "0",
            "--threads",   "1",
            "--grpc-port", "-1"};
  o.args.insert(o.args.end(), extra.begin(), extra.end());
  std::string error;
  auto s = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  EXPECT_NE(s, nullptr) << error;
  return s;
}

// A good 4 x 3 grey PNG.
std::string SmallPng() {
  testing::PngSpec spec;
  spec.width = 4;
  spec.height = 3;
  spec.samples.assign(4 * 3 * 3, 200);
  return testing::EncodePng(spec);
}

TEST(SparrowdImagesTest, EachBadImageHasItsOwn400AndAGoodOneNeedsAnEncoder) {
  auto s = StartOnStories();
  ASSERT_NE(s, nullptr);
  const std::string png = SmallPng();

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

TEST(SparrowdImagesTest, MmprojLoadsTheEncoderOfTheModelsWidthOnly) {
  testing::ProjectorSpec spec;
  spec.n_text_embd = 64;  // stories260K's width
  const std::string mmproj = testing::TempPath("sparrowd-images-mmproj.gguf");
  ASSERT_TRUE(testing::WriteGemma3Projector(spec, mmproj).ok());
  auto s = StartOnStories({"--mmproj", mmproj});
  ASSERT_NE(s, nullptr);
  Expect400(Chat(*s, {ImagePart(DataUrl(SmallPng()))}), "has a vision encoder (gemma3, --mmproj)",
            "messages[0].content[1]");
  s.reset();

  spec.n_text_embd = 256;
  ASSERT_TRUE(testing::WriteGemma3Projector(spec, mmproj).ok());
  const testing::CommandResult r = testing::RunCommand(
      SparrowdProcess::Binary(SPARROWD) + " --model " + testing::ModelPath("stories260K.gguf") +
      " --mmproj " + mmproj + " --port 0 --grpc-port -1 --threads 1");
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("'mmproj' " + mmproj + " gives image embeddings of 256"), std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace sparrow
