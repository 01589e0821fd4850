#include "tests/util/image_files.h"

#include <png.h>
#include <zlib.h>

#include <csetjmp>
#include <cstdio>
// clang-format off
#include <jpeglib.h>
// clang-format on
#include <webp/encode.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace sparrow::testing {
namespace {

void AppendBytes(png_structp png, png_bytep data, size_t n) {
  static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<char*>(data), n);
}

// The rows packed as PNG stores them: sub-byte samples from the high bit, 16-bit big-endian.
std::vector<std::vector<uint8_t>> PackRows(const PngSpec& s) {
  const size_t channels = PngChannels(s.color_type);
  const size_t per_row = s.width * channels;
  std::vector<std::vector<uint8_t>> rows(s.height);
  for (uint32_t y = 0; y < s.height; ++y) {
    std::vector<uint8_t>& row = rows[y];
    row.assign((per_row * static_cast<size_t>(s.bit_depth) + 7) / 8, 0);
    for (size_t i = 0; i < per_row; ++i) {
      const uint16_t v = s.samples[y * per_row + i];
      if (s.bit_depth == 16) {
        row[2 * i] = static_cast<uint8_t>(v >> 8);
        row[2 * i + 1] = static_cast<uint8_t>(v & 0xff);
      } else if (s.bit_depth == 8) {
        row[i] = static_cast<uint8_t>(v);
      } else {
        const size_t bit = i * static_cast<size_t>(s.bit_depth);
        row[bit / 8] |= static_cast<uint8_t>(v << (8 - s.bit_depth - bit % 8));
      }
    }
  }
  return rows;
}

bool WritePng(png_structp png, png_infop info, const PngSpec& s, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_IHDR(png, info, s.width, s.height, s.bit_depth, s.color_type,
               s.interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (s.color_type == PNG_COLOR_TYPE_PALETTE) {
    png_set_PLTE(png, info, reinterpret_cast<png_const_colorp>(s.palette.data()),
                 static_cast<int>(s.palette.size()));
    if (!s.palette_alpha.empty()) {
      png_set_tRNS(png, info, s.palette_alpha.data(), static_cast<int>(s.palette_alpha.size()),
                   nullptr);
    }
  }
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, nullptr);
  return true;
}

void PutBigEndian(std::string* s, size_t at, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) {
    (*s)[at + i] = static_cast<char>((v >> (8 * (bytes - 1 - i))) & 0xff);
  }
}

}  // namespace

size_t PngChannels(int color_type) {
  switch (color_type) {
    case PNG_COLOR_TYPE_GRAY:
    case PNG_COLOR_TYPE_PALETTE:
      return 1;
    case PNG_COLOR_TYPE_GRAY_ALPHA:
      return 2;
    case PNG_COLOR_TYPE_RGB:
      return 3;
    default:
      return 4;
  }
}

std::string EncodePng(const PngSpec& s) {
  std::vector<std::vector<uint8_t>> packed = PackRows(s);
  std::vector<png_bytep> rows;
  for (auto& r : packed) rows.push_back(r.data());
  std::string out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_set_write_fn(png, &out, AppendBytes, nullptr);
  const bool ok = WritePng(png, info, s, rows.data());
  png_destroy_write_struct(&png, &info);
  if (!ok) throw std::runtime_error("libpng could not write the test image");
  return out;
}

std::string EncodeJpeg(uint32_t width, uint32_t height, int components,
                       const std::vector<uint8_t>& samples, int quality, bool progressive) {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr err;
  cinfo.err = jpeg_std_error(&err);  // a test image the encoder refuses ends the test process
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = width;
  cinfo.image_height = height;
  cinfo.input_components = components;
  cinfo.in_color_space = components == 1 ? JCS_GRAYSCALE : components == 3 ? JCS_RGB : JCS_CMYK;
  jpeg_set_defaults(&cinfo);
  if (components == 4) jpeg_set_colorspace(&cinfo, JCS_YCCK);
  jpeg_set_quality(&cinfo, quality, TRUE);
  if (quality == 100 && components >= 3) {
    for (int c = 0; c < components; ++c) {
      cinfo.comp_info[c].h_samp_factor = cinfo.comp_info[c].v_samp_factor = 1;
    }
  }
  if (progressive) jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  const size_t stride = static_cast<size_t>(width) * static_cast<size_t>(components);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(samples.data()) + stride * cinfo.next_scanline;
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  std::string out(reinterpret_cast<char*>(buffer), size);
  jpeg_destroy_compress(&cinfo);
  std::free(buffer);
  return out;
}

std::string EncodeWebp(uint32_t width, uint32_t height, const std::vector<uint8_t>& samples,
                       bool alpha, bool lossless, float quality) {
  uint8_t* output = nullptr;
  const int w = static_cast<int>(width), h = static_cast<int>(height);
  const int stride = w * (alpha ? 4 : 3);
  size_t size = 0;
  if (lossless) {
    size = alpha ? WebPEncodeLosslessRGBA(samples.data(), w, h, stride, &output)
                 : WebPEncodeLosslessRGB(samples.data(), w, h, stride, &output);
  } else {
    size = alpha ? WebPEncodeRGBA(samples.data(), w, h, stride, quality, &output)
                 : WebPEncodeRGB(samples.data(), w, h, stride, quality, &output);
  }
  if (size == 0) throw std::runtime_error("libwebp could not write the test image");
  std::string out(reinterpret_cast<char*>(output), size);
  WebPFree(output);
  return out;
}

std::string WithChunkCrc(std::string png, size_t chunk) {
  // Length (4), type (4), data, CRC (4) of the type and the data.
  size_t length = 0;
  for (size_t k = chunk; k < chunk + 4; ++k) length = length << 8 | static_cast<uint8_t>(png[k]);
  const uint32_t crc = static_cast<uint32_t>(crc32(
      0, reinterpret_cast<const Bytef*>(png.data()) + chunk + 4, static_cast<uInt>(length + 4)));
  PutBigEndian(&png, chunk + 8 + length, crc, 4);
  return png;
}

std::string WithPngSize(std::string png, uint32_t width, uint32_t height) {
  // The signature (8), then IHDR: its length (4) and type (4), then width and height.
  PutBigEndian(&png, 16, width, 4);
  PutBigEndian(&png, 20, height, 4);
  return WithChunkCrc(std::move(png), 8);
}

std::string WithJpegSize(std::string jpeg, uint32_t width, uint32_t height) {
  // The first SOFn marker (FFC0..FFCF but DHT C4, JPG C8, DAC CC): length (2), precision (1),
  // height (2), width (2).
  for (size_t i = 2; i + 9 < jpeg.size();) {
    const auto marker = static_cast<uint8_t>(jpeg[i + 1]);
    const size_t length =
        (static_cast<uint8_t>(jpeg[i + 2]) << 8) | static_cast<uint8_t>(jpeg[i + 3]);
    if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC) {
      PutBigEndian(&jpeg, i + 5, height, 2);
      PutBigEndian(&jpeg, i + 7, width, 2);
      return jpeg;
    }
    i += 2 + length;
  }
  throw std::runtime_error("no SOF marker in the test JPEG");
}

std::vector<uint8_t> GradientRgb(uint32_t width, uint32_t height) {
  std::vector<uint8_t> rgb(static_cast<size_t>(width) * height * 3);
  for (uint32_t y = 0; y < height; ++y) {
    for (uint32_t x = 0; x < width; ++x) {
      uint8_t* p = &rgb[(static_cast<size_t>(y) * width + x) * 3];
      p[0] = static_cast<uint8_t>(x * 255 / (width > 1 ? width - 1 : 1));
      p[1] = static_cast<uint8_t>(y * 255 / (height > 1 ? height - 1 : 1));
      p[2] = static_cast<uint8_t>((x + y) * 127 / (width + height));
    }
  }
  return rgb;
}

}  // namespace sparrow::testing
