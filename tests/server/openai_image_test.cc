// Images in OpenAI chat requests: base64 both ways, data: URLs, image_url content parts kept in
// place among the text, and each refusal naming the part.
#include "api/openai/openai_image.h"

#include <gtest/gtest.h>

#include "api/openai/base64.h"
#include "api/openai/openai_types.h"

namespace sparrow::openai {
namespace {

using json = nlohmann::json;

std::string Bytes(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  for (char& c : s) {
    seed = seed * 1664525u + 1013904223u;
    c = static_cast<char>(seed >> 24);
  }
  return s;
}

std::string DataUrl(const std::string& bytes) {
  return "data:image/png;base64," + Base64Encode(bytes);
}

TEST(Base64Test, RoundTripsEveryTailWithOrWithoutPaddingAndLineBreaks) {
  for (size_t n = 0; n < 20; ++n) {
    const std::string bytes = Bytes(n, static_cast<uint32_t>(n));
    const std::string text = Base64Encode(bytes);
    EXPECT_EQ(text.size() % 4, 0u);
    Result<std::string> back = Base64Decode(text, n);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, bytes);
    std::string bare = text.substr(0, text.find('='));
    EXPECT_EQ(*Base64Decode(bare, n), bytes) << bare;
    if (text.size() > 4) {
      std::string wrapped = text;
      wrapped.insert(4, "\r\n");
      EXPECT_EQ(*Base64Decode(wrapped, n), bytes);
    }
  }
  EXPECT_EQ(Base64Encode("hi"), "aGk=");
}

TEST(Base64Test, RefusesWhatNoEncoderWritesAndTooManyBytesBeforeDecoding) {
  EXPECT_EQ(Base64Decode("ab$d", 10).status().message(), "is not base64 (at offset 2)");
  EXPECT_EQ(Base64Decode("ab=c", 10).status().message(),
            "has data after its '=' padding (at offset 3)");
  EXPECT_EQ(Base64Decode("abcde", 10).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Base64Decode("ab===", 10).status().code(), StatusCode::kInvalidArgument);
  Result<std::string> big = Base64Decode("AAAAAAAA", 5);
  EXPECT_EQ(big.status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(big.status().message(), "decodes to more than 5 bytes");
  // White space does not count against the limit.
  EXPECT_TRUE(Base64Decode("AAAA\n\n\n\n\n\n\n\n", 3).ok());
}

TEST(ImageDataUrlTest, TakesBase64DataUrlsAndRefusesRemoteAndOtherUrls) {
  EXPECT_EQ(*DecodeImageDataUrl("data:image/png;base64,aGk=", 10), "hi");
  EXPECT_EQ(*DecodeImageDataUrl("DATA:image/webp;BASE64,aGk=", 10), "hi");
  EXPECT_EQ(*DecodeImageDataUrl("data:;base64,aGk=", 10), "hi");
  EXPECT_EQ(DecodeImageDataUrl("https://example.com/cat.png", 10).status().message(),
            "is a remote image URL: remote image URLs are not fetched; send the image as a "
            "data: URL (data:image/png;base64,...)");
  EXPECT_NE(DecodeImageDataUrl("HTTP://example.com/cat.png", 10).status().message().find("remote"),
            std::string::npos);
  EXPECT_EQ(DecodeImageDataUrl("file:///etc/passwd", 10).status().message(),
            "must have a data: URL (data:image/png;base64,...) as its url");
  EXPECT_EQ(DecodeImageDataUrl("data:image/png,hi", 10).status().message(),
            "has a data: URL that is not base64 (data:image/png;base64,...)");
  EXPECT_EQ(DecodeImageDataUrl("data:image/png;base64", 10).status().message(),
            "has a data: URL without the ',' before its data");
  EXPECT_EQ(DecodeImageDataUrl("data:image/png;base64,a$==", 10).status().message(),
            "has a data: URL whose data is not base64 (at offset 1)");
}

json UserParts(json parts) {
  return json{{"messages",
               {{{"role", "system"}, {"content", "Be brief."}},
                {{"role", "user"}, {"content", std::move(parts)}}}}};
}

TEST(ImagePartsTest, ImagesKeepTheirPlaceAmongTheTextParts) {
  const std::string a = Bytes(30, 1), b = Bytes(31, 2);
  json body =
      UserParts({{{"type", "text"}, {"text", "Compare "}},
                 {{"type", "image_url"}, {"image_url", {{"url", DataUrl(a)}, {"detail", "low"}}}},
                 {{"type", "text"}, {"text", " with "}},
                 {{"type", "image_url"}, {"image_url", DataUrl(b)}}});
  std::string param;
  auto r = ParseChatCompletionRequest(body, &param);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ChatMessageIn& m = r->messages[1];
  EXPECT_EQ(m.content, "Compare  with ");
  ASSERT_EQ(m.images.size(), 2u);
  EXPECT_EQ(m.images[0].bytes, a);
  EXPECT_EQ(m.images[0].offset, 8u);
  EXPECT_EQ(m.images[0].detail, "low");
  EXPECT_EQ(m.images[0].field, "messages[1].content[1]");
  EXPECT_EQ(m.images[1].bytes, b);  // the string form of image_url
  EXPECT_EQ(m.images[1].offset, 14u);
  EXPECT_EQ(m.images[1].field, "messages[1].content[3]");
  EXPECT_TRUE(r->messages[0].images.empty());
}

// The refusal's message and param.
std::pair<std::string, std::string> Refusal(const json& body) {
  std::string param;
  auto r = ParseChatCompletionRequest(body, &param);
  EXPECT_FALSE(r.ok());
  if (r.ok()) return {"parsed", ""};
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return {r.status().message(), param};
}

TEST(ImagePartsTest, EachBadPartIsRefusedNamingIt) {
  const json image = {{"type", "image_url"}, {"image_url", {{"url", DataUrl("x")}}}};
  auto remote = Refusal(
      UserParts({{{"type", "text"}, {"text", "a"}},
                 {{"type", "image_url"}, {"image_url", {{"url", "https://example.com/a.png"}}}}}));
  EXPECT_EQ(remote.second, "messages[1].content[1]");
  EXPECT_NE(remote.first.find("'messages[1].content[1]' is a remote image URL: remote image URLs "
                              "are not fetched; send the image as a data: URL"),
            std::string::npos)
      << remote.first;

  EXPECT_EQ(Refusal(UserParts({{{"type", "image_url"}, {"image_url", {{"url", 5}}}}})).second,
            "messages[1].content[0]");
  EXPECT_EQ(Refusal(UserParts({{{"type", "image_url"}}})).second, "messages[1].content[0]");
  auto detail = Refusal(UserParts(
      {{{"type", "image_url"}, {"image_url", {{"url", DataUrl("x")}, {"detail", "max"}}}}}));
  EXPECT_EQ(detail.first,
            "'messages[1].content[0]' has image_url.detail other than \"auto\", \"low\" or "
            "\"high\"");
  auto audio = Refusal(UserParts({{{"type", "input_audio"}}}));
  EXPECT_EQ(audio.first,
            "'messages[1].content[0]' has type 'input_audio': content parts are \"text\" or "
            "\"image_url\"");
  EXPECT_EQ(Refusal(UserParts({{{"type", 5}}})).second, "messages[1].content[0]");

  json assistant = {{"messages", {{{"role", "assistant"}, {"content", {image}}}}}};
  EXPECT_EQ(Refusal(assistant).first,
            "'messages[0].content[0]' is an image in a message of role 'assistant': only user "
            "messages take images");
}

TEST(ImagePartsTest, ARequestsImagesAreBoundedInNumberAndBytes) {
  json parts = json::array();
  for (size_t i = 0; i <= kMaxRequestImages; ++i) {
    parts.push_back({{"type", "image_url"}, {"image_url", {{"url", DataUrl("x")}}}});
  }
  auto many = Refusal(UserParts(parts));
  EXPECT_EQ(many.second, "messages[1].content[16]");
  EXPECT_EQ(many.first,
            "'messages[1].content[16]' is one image too many: a request may carry at most 16 "
            "images");
  // Two images of 17 MiB: the second is refused from its base64's length, before decoding.
  const std::string big((size_t{17} << 20) / 3 * 4, 'A');
  json two = {{"messages",
               {{{"role", "user"},
                 {"content", {{{"type", "image_url"}, {"image_url", "data:;base64," + big}}}}},
                {{"role", "user"},
                 {"content", {{{"type", "image_url"}, {"image_url", "data:;base64," + big}}}}}}}};
  auto bytes = Refusal(two);
  EXPECT_EQ(bytes.second, "messages[1].content[0]");
  EXPECT_EQ(bytes.first,
            "'messages[1].content[0]' takes the request's images past 33554432 bytes (the limit "
            "of a request's images together)");
}

}  // namespace
}  // namespace sparrow::openai
