// Gemma 3's preprocessing (libmtmd's resize, padding and normalisation) and the SigLIP encoder
// on the synthetic projector: shapes, refusals, and the same bits on one thread or two.
// tests/golden/vision_golden_test.cc compares the numbers with llama.cpp's.
#include "engine/vision/siglip_encoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/kernels/thread_pool.h"
#include "engine/vision/image_preprocess.h"
#include "tests/util/synthetic_projector.h"

namespace sparrow::vision {
namespace {

Image Gradient(int32_t w, int32_t h) {
  Image im;
  im.width = w;
  im.height = h;
  for (int32_t y = 0; y < h; ++y) {
    for (int32_t x = 0; x < w; ++x) {
      im.rgb.push_back(static_cast<uint8_t>(x * 255 / (w - 1)));
      im.rgb.push_back(static_cast<uint8_t>(y * 255 / (h - 1)));
      im.rgb.push_back(static_cast<uint8_t>((x + y) % 256));
    }
  }
  return im;
}

const uint8_t* At(const Image& im, int32_t x, int32_t y) {
  return &im.rgb[(static_cast<size_t>(y) * static_cast<size_t>(im.width) + static_cast<size_t>(x)) *
                 3];
}

TEST(ImagePreprocessTest, BilinearKeepsTheCornersAndTruncates) {
  const Image src = Gradient(150, 100);
  const Image dst = ResizeBilinear(src, 112, 75);
  ASSERT_EQ(dst.width, 112);
  ASSERT_EQ(dst.height, 75);
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(At(dst, 0, 0)[c], At(src, 0, 0)[c]);
    EXPECT_EQ(At(dst, 111, 74)[c], At(src, 149, 99)[c]);
  }
  // Two pixels 1 and 2 blended 50/50 give 1 (1.5 truncated), not 2.
  Image two;
  two.width = 2;
  two.height = 1;
  two.rgb = {1, 1, 1, 2, 2, 2};
  EXPECT_EQ(ResizeBilinear(two, 3, 1).rgb[3], 1);
}

TEST(ImagePreprocessTest, FitsAWideImageBetweenBlackBands) {
  const Image fitted = FitIntoSquare(Gradient(150, 100), 112);
  ASSERT_EQ(fitted.width, 112);
  ASSERT_EQ(fitted.height, 112);
  // 150 x 100 scaled by 112/150: 112 x 75 (74.67 rounded up), centred 18 rows down.
  for (int32_t y : {0, 17, 93, 111}) {
    for (int c = 0; c < 3; ++c) EXPECT_EQ(At(fitted, 56, y)[c], 0) << "row " << y;
  }
  EXPECT_EQ(At(fitted, 111, 18)[0], 255);  // the source's right edge, top row
  EXPECT_EQ(At(fitted, 0, 92)[1], 255);    // its bottom row
  // An image of the encoder's size is taken as is.
  const Image square = Gradient(112, 112);
  EXPECT_EQ(FitIntoSquare(square, 112).rgb, square.rgb);
}

TEST(ImagePreprocessTest, NormalisesEachChannelIntoPlanes) {
  ClipHparams hp;
  hp.image_size = 4;
  hp.image_mean = {0.5f, 0.25f, 0.0f};
  hp.image_std = {0.5f, 0.25f, 2.0f};
  Image white;
  white.width = 4;
  white.height = 4;
  white.rgb.assign(48, 255);
  const std::vector<float> p = PreprocessGemma3(white, hp);
  ASSERT_EQ(p.size(), 48u);
  EXPECT_FLOAT_EQ(p[0], 1.0f);   // R: (1 - 0.5) / 0.5
  EXPECT_FLOAT_EQ(p[16], 3.0f);  // G: (1 - 0.25) / 0.25
  EXPECT_FLOAT_EQ(p[47], 0.5f);  // B: (1 - 0) / 2
}

class SiglipEncoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bytes_ = testing::MakeGemma3Projector({}).Bytes();
    auto f = GgufFile::FromMemory(bytes_, "synth.mmproj");
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    auto m = ClipModel::FromGguf(std::move(*f));
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(*m);
  }
  std::vector<uint8_t> bytes_;
  std::unique_ptr<ClipModel> model_;
};

TEST_F(SiglipEncoderTest, GivesOneRowPerImageTokenTheSameOnAnyThreadCount) {
  const Image im = Gradient(150, 100);
  auto one = EncodeImage(*model_, im, nullptr);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->n_tokens, 16);
  EXPECT_EQ(one->n_embd, 256);
  ASSERT_EQ(one->data.size(), 16u * 256u);
  for (float v : one->data) ASSERT_TRUE(std::isfinite(v));
  kernels::ThreadPool pool(2);
  auto two = EncodeImage(*model_, im, &pool);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(one->data, two->data);
  // Another image gives other embeddings.
  auto other = EncodeImage(*model_, Gradient(100, 150), nullptr);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(one->data, other->data);
}

TEST_F(SiglipEncoderTest, RefusesPixelsOfAnotherSize) {
  const std::vector<float> pixels(3 * 100 * 100, 0.0f);
  auto r = EncodeGemma3Pixels(*model_, pixels, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("112x112"), std::string::npos) << r.status().message();
  EXPECT_FALSE(EncodeImage(*model_, Image{}, nullptr).ok());
}

}  // namespace
}  // namespace sparrow::vision
