#pragma once
// Test images written by the real encoders (libpng, libjpeg-turbo, libwebp), and headers
// patched to claim other sizes (bombs). Never a hand-made image file. Thread-safe.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace sparrow::testing {

struct PngSpec {
  uint32_t width = 1;
  uint32_t height = 1;
  int color_type = 2;  // PNG_COLOR_TYPE_*: 0 grey, 2 RGB, 3 palette, 4 grey+alpha, 6 RGBA
  int bit_depth = 8;   // 1, 2, 4, 8 or 16 as the colour type allows
  // width * height * channels samples, row-major, each below 2^bit_depth (palette: indices).
  std::vector<uint16_t> samples;
  std::vector<std::array<uint8_t, 3>> palette;  // colour type 3
  std::vector<uint8_t> palette_alpha;           // colour type 3: its tRNS chunk, if any
  bool interlaced = false;                      // Adam7
};
std::string EncodePng(const PngSpec& spec);
// Samples a pixel of the PNG colour type: 1 (grey, palette), 2, 3 or 4.
size_t PngChannels(int color_type);

// `components` 1 (grey), 3 (RGB) or 4 (CMYK, stored as YCCK with Adobe's marker, as
// Photoshop writes it) samples a pixel; quality 1..100; no subsampling at quality 100.
std::string EncodeJpeg(uint32_t width, uint32_t height, int components,
                       const std::vector<uint8_t>& samples, int quality, bool progressive = false);

// RGB (3 a pixel) or RGBA (4) samples; lossless, or lossy at `quality` (0..100).
std::string EncodeWebp(uint32_t width, uint32_t height, const std::vector<uint8_t>& samples,
                       bool alpha, bool lossless, float quality = 90);

// The file with its header claiming width x height (PNG: IHDR with its CRC; JPEG: the SOF
// marker); the pixel data stays that of the real, smaller image.
std::string WithPngSize(std::string png, uint32_t width, uint32_t height);
std::string WithJpegSize(std::string jpeg, uint32_t width, uint32_t height);
// The PNG with the CRC of its chunk at byte `chunk` (its length field) made to match its data.
std::string WithChunkCrc(std::string png, size_t chunk);

// A smooth RGB test pattern (width * height * 3 bytes) that lossy coders keep well.
std::vector<uint8_t> GradientRgb(uint32_t width, uint32_t height);

}  // namespace sparrow::testing
