// Writes the image fuzzer's seeds into the folder argv[1]: small PNG (every colour type and
// depth, palette with tRNS, interlaced), JPEG (baseline, progressive, grey) and WebP (lossless,
// lossy, alpha) files made by the real encoders (tests/util/image_files.h).
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tests/util/image_files.h"

namespace {

using sparrow::testing::PngSpec;

void Write(const std::string& dir, const std::string& name, const std::string& bytes) {
  std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
}

PngSpec Png(int color_type, int bit_depth, bool interlaced = false) {
  PngSpec s;
  s.width = 9;
  s.height = 7;
  s.color_type = color_type;
  s.bit_depth = bit_depth;
  s.interlaced = interlaced;
  const size_t channels = sparrow::testing::PngChannels(color_type);
  const uint32_t below = color_type == 3 ? 2 : uint32_t{1} << bit_depth;
  for (size_t i = 0; i < s.width * s.height * channels; ++i) {
    s.samples.push_back(static_cast<uint16_t>((i * 2654435761u) % below));
  }
  if (color_type == 3) {
    s.palette = {{{1, 2, 3}}, {{250, 128, 0}}};
    s.palette_alpha = {128};
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_image_seeds DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  namespace t = sparrow::testing;
  Write(dir, "rgb8.png", t::EncodePng(Png(2, 8)));
  Write(dir, "rgba16.png", t::EncodePng(Png(6, 16)));
  Write(dir, "grey1.png", t::EncodePng(Png(0, 1)));
  Write(dir, "grey-alpha8.png", t::EncodePng(Png(4, 8)));
  Write(dir, "palette.png", t::EncodePng(Png(3, 2)));
  Write(dir, "interlaced.png", t::EncodePng(Png(2, 8, true)));
  const std::vector<uint8_t> rgb = t::GradientRgb(9, 7);
  std::vector<uint8_t> grey(rgb.begin(), rgb.begin() + 63);
  Write(dir, "baseline.jpg", t::EncodeJpeg(9, 7, 3, rgb, 80));
  Write(dir, "progressive.jpg", t::EncodeJpeg(9, 7, 3, rgb, 80, true));
  Write(dir, "grey.jpg", t::EncodeJpeg(9, 7, 1, grey, 80));
  Write(dir, "lossless.webp", t::EncodeWebp(9, 7, rgb, false, true));
  Write(dir, "lossy.webp", t::EncodeWebp(9, 7, rgb, false, false, 80));
  std::vector<uint8_t> rgba;
  for (size_t i = 0; i < rgb.size(); i += 3)
    rgba.insert(rgba.end(), {rgb[i], rgb[i + 1], rgb[i + 2], 77});
  Write(dir, "alpha.webp", t::EncodeWebp(9, 7, rgba, true, false, 80));
  return 0;
}
