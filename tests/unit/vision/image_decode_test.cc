// DecodeImage against images the real encoders write (tests/util/image_files.h): each format's
// pixels, the channels as llama.cpp's libmtmd loads them (stb_image with 3 channels), and each
// refusal: truncated, corrupt, the wrong type, a header bomb, an over-long side, no bytes.
#include "engine/vision/image_decode.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/util/image_files.h"

namespace sparrow::vision {
namespace {

using testing::PngSpec;

std::vector<uint16_t> Samples(size_t n, uint32_t below, uint32_t seed = 7) {
  std::vector<uint16_t> v(n);
  for (auto& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<uint16_t>((seed >> 8) % below);
  }
  return v;
}

Image Decoded(const std::string& file, const ImageLimits& limits = {}) {
  Result<Image> image = DecodeImage(ImageBytes(file), limits);
  EXPECT_TRUE(image.ok()) << image.status().ToString();
  return image.ok() ? std::move(image).value() : Image{};
}

std::string Error(const std::string& file, const ImageLimits& limits = {}) {
  Result<Image> image = DecodeImage(ImageBytes(file), limits);
  EXPECT_FALSE(image.ok());
  if (image.ok()) return "decoded";
  EXPECT_EQ(image.status().code(), StatusCode::kInvalidArgument) << image.status().ToString();
  return image.status().message();
}

// The RGB a pixel of `spec` gives with stb_image's 3-channel conversion.
std::vector<uint8_t> ExpectedRgb(const PngSpec& s) {
  const size_t channels = testing::PngChannels(s.color_type);
  const int scale = s.bit_depth >= 8 ? 1 : 255 / ((1 << s.bit_depth) - 1);
  std::vector<uint8_t> rgb;
  for (size_t p = 0; p < size_t{s.width} * s.height; ++p) {
    const uint16_t* px = &s.samples[p * channels];
    auto eight = [&](uint16_t v) {
      return static_cast<uint8_t>(s.bit_depth == 16 ? v >> 8 : v * scale);
    };
    if (s.color_type == 3) {
      for (int c = 0; c < 3; ++c) rgb.push_back(s.palette[px[0]][c]);
    } else if (channels <= 2) {
      for (int c = 0; c < 3; ++c) rgb.push_back(eight(px[0]));  // grey copied, alpha dropped
    } else {
      for (int c = 0; c < 3; ++c) rgb.push_back(eight(px[c]));  // alpha dropped, not blended
    }
  }
  return rgb;
}

PngSpec Png(uint32_t w, uint32_t h, int color_type, int bit_depth) {
  PngSpec s;
  s.width = w;
  s.height = h;
  s.color_type = color_type;
  s.bit_depth = bit_depth;
  const size_t channels = testing::PngChannels(color_type);
  // Palette images index the five colours of the palette the test gives them.
  const uint32_t below = color_type == 3 ? 5 : uint32_t{1} << bit_depth;
  s.samples = Samples(size_t{w} * h * channels, below);
  return s;
}

int MaxDifference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  EXPECT_EQ(a.size(), b.size());
  int worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

TEST(ImageDecodeTest, PngPixelsAreExactInEveryLayoutAsStbImageGivesThem) {
  struct Case {
    const char* name;
    int color_type, bit_depth;
  };
  for (const Case c :
       {Case{"rgb8", 2, 8}, Case{"rgba8", 6, 8}, Case{"grey8", 0, 8}, Case{"grey+alpha8", 4, 8},
        Case{"rgb16", 2, 16}, Case{"rgba16", 6, 16}, Case{"grey16", 0, 16}, Case{"grey1", 0, 1},
        Case{"grey2", 0, 2}, Case{"grey4", 0, 4}, Case{"palette4", 3, 4}, Case{"palette8", 3, 8}}) {
    SCOPED_TRACE(c.name);
    PngSpec s = Png(7, 5, c.color_type, c.bit_depth);
    if (c.color_type == 3) {
      s.palette = {{{10, 20, 30}}, {{200, 100, 0}}, {{0, 255, 1}}, {{9, 9, 9}}, {{250, 0, 250}}};
      s.palette_alpha = {0, 128, 255};  // tRNS: dropped like any alpha
    }
    const Image image = Decoded(testing::EncodePng(s));
    EXPECT_EQ(image.width, 7);
    EXPECT_EQ(image.height, 5);
    EXPECT_EQ(image.rgb, ExpectedRgb(s));
  }
}

TEST(ImageDecodeTest, InterlacedPngGivesTheSamePixels) {
  PngSpec s = Png(13, 11, 2, 8);
  const std::vector<uint8_t> flat = Decoded(testing::EncodePng(s)).rgb;
  s.interlaced = true;
  EXPECT_EQ(Decoded(testing::EncodePng(s)).rgb, flat);
  EXPECT_EQ(flat, ExpectedRgb(s));
}

TEST(ImageDecodeTest, JpegDecodesWithinTheCodersLoss) {
  const std::vector<uint8_t> rgb = testing::GradientRgb(40, 24);
  const Image baseline = Decoded(testing::EncodeJpeg(40, 24, 3, rgb, 100));
  EXPECT_EQ(baseline.width, 40);
  EXPECT_EQ(baseline.height, 24);
  EXPECT_LE(MaxDifference(baseline.rgb, rgb), 4);
  const Image progressive = Decoded(testing::EncodeJpeg(40, 24, 3, rgb, 100, true));
  EXPECT_EQ(progressive.rgb, baseline.rgb);  // the same coefficients, another order
  // Grey comes out with R = G = B.
  std::vector<uint8_t> grey(40 * 24);
  for (size_t i = 0; i < grey.size(); ++i) grey[i] = rgb[3 * i];
  const Image g = Decoded(testing::EncodeJpeg(40, 24, 1, grey, 95));
  ASSERT_EQ(g.rgb.size(), grey.size() * 3);
  std::vector<uint8_t> expanded;
  for (size_t i = 0; i < grey.size(); ++i) {
    EXPECT_EQ(g.rgb[3 * i], g.rgb[3 * i + 1]);
    EXPECT_EQ(g.rgb[3 * i], g.rgb[3 * i + 2]);
    for (int c = 0; c < 3; ++c) expanded.push_back(grey[i]);
  }
  EXPECT_LE(MaxDifference(g.rgb, expanded), 6);
}

TEST(ImageDecodeTest, CmykJpegBecomesRgbAsStbImageConvertsIt) {
  // Adobe's inverted CMYK, stored as YCCK: stb_image's RGB is c * k / 255 (rounded), per
  // channel. Pixels of distinct values over the whole row, so that the in-place conversion of
  // a row would show a pixel overwritten before it was read.
  const uint32_t w = 23, h = 5;
  std::vector<uint8_t> cmyk;
  for (uint32_t i = 0; i < w * h; ++i) {
    cmyk.insert(cmyk.end(),
                {static_cast<uint8_t>(40 + i), static_cast<uint8_t>(200 - i),
                 static_cast<uint8_t>(90 + (i % 7) * 20), static_cast<uint8_t>(255 - i / 2)});
  }
  const Image image = Decoded(testing::EncodeJpeg(w, h, 4, cmyk, 100));
  ASSERT_EQ(image.rgb.size(), size_t{w} * h * 3);
  std::vector<uint8_t> expected;
  for (size_t p = 0; p < size_t{w} * h; ++p) {
    for (int c = 0; c < 3; ++c) {
      const unsigned t = unsigned{cmyk[4 * p + c]} * cmyk[4 * p + 3] + 128;
      expected.push_back(static_cast<uint8_t>((t + (t >> 8)) >> 8));
    }
  }
  EXPECT_LE(MaxDifference(image.rgb, expected), 4);  // the JPEG's own loss at quality 100
}

TEST(ImageDecodeTest, WebpLosslessIsExactLossyWithinABoundAlphaDropped) {
  const std::vector<uint8_t> rgb = testing::GradientRgb(33, 17);
  EXPECT_EQ(Decoded(testing::EncodeWebp(33, 17, rgb, false, true)).rgb, rgb);
  const Image lossy = Decoded(testing::EncodeWebp(33, 17, rgb, false, false, 95));
  EXPECT_EQ(lossy.width, 33);
  EXPECT_LE(MaxDifference(lossy.rgb, rgb), 12);  // 4:2:0 chroma on a gradient: 6 seen
  std::vector<uint8_t> rgba;
  for (size_t i = 0; i < rgb.size(); i += 3) {
    // Alpha never 0: libwebp's lossless encoder may change the colour under a pixel fully
    // transparent (WebPConfig::exact is off).
    rgba.insert(rgba.end(), {rgb[i], rgb[i + 1], rgb[i + 2], static_cast<uint8_t>(1 + i % 255)});
  }
  EXPECT_EQ(Decoded(testing::EncodeWebp(33, 17, rgba, true, true)).rgb, rgb);
}

TEST(ImageDecodeTest, ReadImageInfoReadsOnlyTheHeader) {
  const std::vector<uint8_t> rgb = testing::GradientRgb(6, 4);
  struct Case {
    std::string file;
    ImageFormat format;
  };
  for (const Case& c : {Case{testing::EncodePng(Png(6, 4, 2, 8)), ImageFormat::kPng},
                        Case{testing::EncodeJpeg(6, 4, 3, rgb, 90), ImageFormat::kJpeg},
                        Case{testing::EncodeWebp(6, 4, rgb, false, true), ImageFormat::kWebp}}) {
    Result<ImageInfo> info = ReadImageInfo(ImageBytes(c.file));
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_EQ(info->format, c.format);
    EXPECT_EQ(info->width, 6);
    EXPECT_EQ(info->height, 4);
  }
  // A bomb's header is read as it claims, without decoding it.
  Result<ImageInfo> bomb = ReadImageInfo(
      ImageBytes(testing::WithPngSize(testing::EncodePng(Png(2, 2, 2, 8)), 30000, 30000)));
  ASSERT_TRUE(bomb.ok()) << bomb.status().ToString();
  EXPECT_EQ(bomb->width, 30000);
}

TEST(ImageDecodeTest, EveryTruncationIsAnErrorNeverACrash) {
  const std::vector<uint8_t> rgb = testing::GradientRgb(9, 7);
  for (const std::string& file :
       {testing::EncodePng(Png(9, 7, 6, 8)), testing::EncodeJpeg(9, 7, 3, rgb, 90),
        testing::EncodeJpeg(9, 7, 3, rgb, 90, true), testing::EncodeWebp(9, 7, rgb, false, true),
        testing::EncodeWebp(9, 7, rgb, false, false)}) {
    ASSERT_TRUE(DecodeImage(ImageBytes(file)).ok());
    for (size_t n = 1; n < file.size(); ++n) {
      Result<Image> cut = DecodeImage(ImageBytes(std::string_view(file).substr(0, n)));
      ASSERT_FALSE(cut.ok()) << "the first " << n << " of " << file.size() << " bytes decoded";
      EXPECT_EQ(cut.status().code(), StatusCode::kInvalidArgument);
    }
  }
  const std::string png = testing::EncodePng(Png(9, 7, 2, 8));
  EXPECT_NE(Error(png.substr(0, png.size() / 2)).find("the PNG is truncated or corrupt (libpng:"),
            std::string::npos);
  const std::string jpeg = testing::EncodeJpeg(9, 7, 3, rgb, 90);
  EXPECT_NE(Error(jpeg.substr(0, jpeg.size() - 40))
                .find("the JPEG is truncated or corrupt (libjpeg: Premature end of JPEG file)"),
            std::string::npos);
}

TEST(ImageDecodeTest, CorruptPngDataIsRefused) {
  const std::string png = testing::EncodePng(Png(16, 16, 2, 8));
  const size_t idat = png.find("IDAT");
  ASSERT_NE(idat, std::string::npos);
  size_t length = 0;
  for (size_t k = idat - 4; k < idat; ++k) length = length << 8 | static_cast<uint8_t>(png[k]);
  std::string bad_crc = png;
  bad_crc[idat + 4 + length] = static_cast<char>(bad_crc[idat + 4 + length] ^ 0x55);
  EXPECT_EQ(Error(bad_crc), "the PNG is truncated or corrupt (libpng: IDAT: CRC error)");
  // Corrupt compressed data, its CRC made to match: zlib's error, or too little or too much.
  std::string bad_data = png;
  for (size_t k = idat + 6; k < idat + 4 + length; k += 7) bad_data[k] = static_cast<char>(k);
  bad_data = testing::WithChunkCrc(bad_data, idat - 4);
  EXPECT_EQ(Error(bad_data).rfind("the PNG is truncated or corrupt (libpng: ", 0), 0u);
}

TEST(ImageDecodeTest, AChunkLongerThanTheFileIsNotAllocated) {
  // image_decode_fuzz's find: after a real IHDR, a zTXt chunk claiming 725 MB in a 45-byte
  // file, which libpng allocated before reading. Now the allocation is refused, the chunk
  // skipped, and the file is short.
  std::string png = testing::EncodePng(Png(9, 7, 2, 8)).substr(0, 33);
  png += std::string("\x2b\x3b\x00\x2f", 4) + "zTXtIDAT";
  EXPECT_EQ(Error(png), "the PNG is truncated or corrupt (libpng: read past the end of the data)");
}

TEST(ImageDecodeTest, OtherTypesAreRefusedNamingWhatTheyAre) {
  EXPECT_EQ(Error("GIF89a\x01\x00\x01\x00"),
            "the data is a GIF image: images are taken as PNG, JPEG or WebP");
  EXPECT_NE(Error("BM\x3a\0\0\0").find("a BMP image"), std::string::npos);
  EXPECT_NE(Error("<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>")
                .find("an SVG image"),
            std::string::npos);
  EXPECT_NE(Error(std::string("\0\0\0\x1c"
                              "ftypavif",
                              12))
                .find("an AVIF image"),
            std::string::npos);
  EXPECT_NE(Error("iVBORw0KGgoAAAANSUhEUg").find("a PNG encoded in base64 twice"),
            std::string::npos);
  EXPECT_EQ(Error("hello"),
            "the data is not a PNG, JPEG or WebP image (its first bytes are 68 65 6c 6c 6f)");
}

TEST(ImageDecodeTest, AHeaderBombIsRefusedBeforeDecoding) {
  // 30,000 x 30,000 claimed, the data that of a 2 x 2 image: a decode would fail on the data,
  // so the size message shows the header alone was read.
  const std::string png = testing::WithPngSize(testing::EncodePng(Png(2, 2, 2, 8)), 30000, 30000);
  EXPECT_EQ(Error(png),
            "the PNG is 30000 x 30000 pixels (900000000), more than the limit of 16777216 pixels");
  const std::vector<uint8_t> rgb = testing::GradientRgb(2, 2);
  const std::string jpeg =
      testing::WithJpegSize(testing::EncodeJpeg(2, 2, 3, rgb, 90), 30000, 30000);
  EXPECT_EQ(Error(jpeg),
            "the JPEG is 30000 x 30000 pixels (900000000), more than the limit of 16777216 pixels");
}

TEST(ImageDecodeTest, AnOverLongSideIsRefused) {
  // Real images: a 9000 x 1 PNG (well within the pixel limit), and a WebP under small limits.
  PngSpec wide = Png(9000, 1, 0, 8);
  EXPECT_EQ(Error(testing::EncodePng(wide)),
            "the PNG is 9000 x 1 pixels, a side longer than the limit of 8192 pixels");
  const std::vector<uint8_t> rgb = testing::GradientRgb(2, 40);
  ImageLimits small;
  small.max_side = 32;
  EXPECT_EQ(Error(testing::EncodeWebp(2, 40, rgb, false, true), small),
            "the WebP is 2 x 40 pixels, a side longer than the limit of 32 pixels");
}

TEST(ImageDecodeTest, NoBytesAndTooManyBytesAreRefused) {
  EXPECT_EQ(Error(""), "the image is empty (0 bytes)");
  ImageLimits small;
  small.max_bytes = 64;
  const std::string png = testing::EncodePng(Png(9, 9, 2, 8));
  ASSERT_GT(png.size(), 64u);
  EXPECT_EQ(Error(png, small), "the image is " + std::to_string(png.size()) +
                                   " bytes, more than the limit of 64 bytes");
}

}  // namespace
}  // namespace sparrow::vision
