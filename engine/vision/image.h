#pragma once
// A decoded image in engine terms, and the bounds every decode is held to. Plain data.
//
// Channels are those llama.cpp's libmtmd loads (stb_image asked for 3 channels), so that an
// encoder fed from here sees the pixels llama.cpp's does: alpha dropped (not blended onto a
// background), grey copied to R, G and B, 16-bit samples reduced to their high byte, palettes
// expanded, gamma and colour profiles ignored, EXIF orientation ignored.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace sparrow::vision {

enum class ImageFormat { kPng, kJpeg, kWebp };

// "PNG", "JPEG" or "WebP".
const char* ImageFormatName(ImageFormat format);

// What the header says, read without decoding any pixel.
struct ImageInfo {
  ImageFormat format = ImageFormat::kPng;
  int32_t width = 0;
  int32_t height = 0;
};

// width x height pixels, row-major from the top left, RGB8 interleaved: rgb.size() is
// width * height * 3.
struct Image {
  int32_t width = 0;
  int32_t height = 0;
  std::vector<uint8_t> rgb;
};

// The bounds of one image, checked before anything is allocated for it: the byte count first,
// then the header's size, before any pixel buffer. The defaults are what a phone can afford for
// an image held while it is encoded: a 12-megapixel phone photo (4032 x 3024) fits, and the
// largest image decodes to 48 MiB of RGB.
struct ImageLimits {
  size_t max_bytes = size_t{20} << 20;        // 20 MiB of PNG, JPEG or WebP data
  int64_t max_pixels = int64_t{4096} * 4096;  // 16,777,216 pixels: 48 MiB as RGB8
  int32_t max_side = 8192;                    // pixels, either side (panoramas within the count)
};

// A string's bytes as the decoders take them.
inline std::span<const uint8_t> ImageBytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace sparrow::vision
