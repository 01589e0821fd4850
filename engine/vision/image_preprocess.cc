#include "engine/vision/image_preprocess.h"

#include <algorithm>
#include <cmath>

#include "engine/common/check.h"

namespace sparrow::vision {

namespace {

float Lerp(float s, float e, float t) {
  return s + (e - s) * t;
}

const uint8_t* Pixel(const Image& im, int32_t x, int32_t y) {
  return &im.rgb[(static_cast<size_t>(y) * static_cast<size_t>(im.width) + static_cast<size_t>(x)) *
                 3];
}

}  // namespace

Image ResizeBilinear(const Image& src, int32_t width, int32_t height) {
  SPARROW_CHECK(src.width > 0 && src.height > 0);
  width = std::max(width, 1);
  height = std::max(height, 1);
  Image dst;
  dst.width = width;
  dst.height = height;
  dst.rgb.resize(static_cast<size_t>(width) * static_cast<size_t>(height) * 3);
  const float x_ratio =
      width > 1 ? static_cast<float>(src.width - 1) / static_cast<float>(width - 1) : 0.0f;
  const float y_ratio =
      height > 1 ? static_cast<float>(src.height - 1) / static_cast<float>(height - 1) : 0.0f;
  for (int32_t y = 0; y < height; ++y) {
    const float py = static_cast<float>(y) * y_ratio;
    const int32_t y0 = std::min(static_cast<int32_t>(py), src.height - 1);
    const int32_t y1 = std::min(y0 + 1, src.height - 1);
    const float yf = py - static_cast<float>(y0);
    for (int32_t x = 0; x < width; ++x) {
      const float px = static_cast<float>(x) * x_ratio;
      const int32_t x0 = std::min(static_cast<int32_t>(px), src.width - 1);
      const int32_t x1 = std::min(x0 + 1, src.width - 1);
      const float xf = px - static_cast<float>(x0);
      const uint8_t* p00 = Pixel(src, x0, y0);
      const uint8_t* p10 = Pixel(src, x1, y0);
      const uint8_t* p01 = Pixel(src, x0, y1);
      const uint8_t* p11 = Pixel(src, x1, y1);
      uint8_t* out =
          &dst.rgb[(static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(x)) *
                   3];
      for (int c = 0; c < 3; ++c) {
        const float top = Lerp(static_cast<float>(p00[c]), static_cast<float>(p10[c]), xf);
        const float bottom = Lerp(static_cast<float>(p01[c]), static_cast<float>(p11[c]), xf);
        out[c] = static_cast<uint8_t>(Lerp(top, bottom, yf));  // truncated, as libmtmd does
      }
    }
  }
  return dst;
}

Image FitIntoSquare(const Image& src, int32_t size) {
  if (src.width == size && src.height == size) return src;
  const float scale = std::min(static_cast<float>(size) / static_cast<float>(src.width),
                               static_cast<float>(size) / static_cast<float>(src.height));
  const int32_t w =
      std::min(static_cast<int32_t>(std::ceil(static_cast<float>(src.width) * scale)), size);
  const int32_t h =
      std::min(static_cast<int32_t>(std::ceil(static_cast<float>(src.height) * scale)), size);
  const Image scaled = ResizeBilinear(src, w, h);
  Image dst;
  dst.width = size;
  dst.height = size;
  dst.rgb.assign(static_cast<size_t>(size) * static_cast<size_t>(size) * 3, 0);
  const int32_t off_x = (size - scaled.width) / 2;
  const int32_t off_y = (size - scaled.height) / 2;
  for (int32_t y = 0; y < scaled.height; ++y) {
    std::copy_n(Pixel(scaled, 0, y), static_cast<size_t>(scaled.width) * 3,
                &dst.rgb[(static_cast<size_t>(y + off_y) * static_cast<size_t>(size) +
                          static_cast<size_t>(off_x)) *
                         3]);
  }
  return dst;
}

std::vector<float> PreprocessGemma3(const Image& image, const ClipHparams& hp) {
  const auto size = static_cast<int32_t>(hp.image_size);
  const Image fitted = FitIntoSquare(image, size);
  const size_t plane = static_cast<size_t>(size) * static_cast<size_t>(size);
  std::vector<float> out(3 * plane);
  for (size_t i = 0; i < plane; ++i) {
    for (size_t c = 0; c < 3; ++c) {
      const float v = static_cast<float>(fitted.rgb[i * 3 + c]) / 255.0f;
      out[c * plane + i] = (v - hp.image_mean[c]) / hp.image_std[c];
    }
  }
  return out;
}

}  // namespace sparrow::vision
