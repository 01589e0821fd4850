#include "engine/vision/image_format.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>

namespace sparrow::vision {
namespace {

using namespace std::string_view_literals;

bool StartsWith(std::span<const uint8_t> b, std::string_view magic, size_t at = 0) {
  return b.size() >= at + magic.size() &&
         std::equal(magic.begin(), magic.end(), b.begin() + static_cast<ptrdiff_t>(at),
                    [](char m, uint8_t c) { return static_cast<uint8_t>(m) == c; });
}

// The ISO base media file's major brand (bytes 8..11, after "ftyp" at 4..7).
const char* IsoMediaName(std::span<const uint8_t> b) {
  const std::string_view brand(reinterpret_cast<const char*>(b.data()) + 8, 4);
  if (brand == "avif" || brand == "avis") return "an AVIF image";
  if (brand == "heic" || brand == "heix" || brand == "hevc" || brand == "heim" || brand == "heis" ||
      brand == "mif1" || brand == "msf1") {
    return "a HEIF/HEIC image";
  }
  return "an MP4/MOV or other ISO media file";
}

// Text that starts with '<' (after blanks): SVG or another XML or HTML document.
const char* MarkupName(std::span<const uint8_t> b) {
  size_t i = StartsWith(b, "\xEF\xBB\xBF"sv) ? 3 : 0;  // a UTF-8 byte order mark
  while (i < b.size() && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n')) ++i;
  if (i == b.size() || b[i] != '<') return nullptr;
  const std::string_view head(reinterpret_cast<const char*>(b.data()) + i,
                              std::min<size_t>(b.size() - i, 1024));
  if (head.find("<svg") != std::string_view::npos) return "an SVG image";
  return "XML or HTML text";
}

// What the bytes are when they are none of the three formats decoded; null: not known.
const char* RefusedName(std::span<const uint8_t> b) {
  if (StartsWith(b, "GIF87a"sv) || StartsWith(b, "GIF89a"sv)) return "a GIF image";
  if (StartsWith(b, "BM"sv)) return "a BMP image";
  if (StartsWith(b, "II*\0"sv) || StartsWith(b, "MM\0*"sv)) return "a TIFF image";
  if (StartsWith(b, "\0\0\1\0"sv) || StartsWith(b, "\0\0\2\0"sv)) return "an ICO/CUR icon";
  if (StartsWith(b, "8BPS"sv)) return "a Photoshop (PSD) image";
  if (StartsWith(b, "\xFF\x0A"sv) || StartsWith(b, "\0\0\0\x0CJXL \x0D\x0A\x87\x0A"sv)) {
    return "a JPEG XL image";
  }
  if (StartsWith(b, "\0\0\0\x0CjP  \x0D\x0A\x87\x0A"sv) || StartsWith(b, "\xFF\x4F\xFF\x51"sv)) {
    return "a JPEG 2000 image";
  }
  if (StartsWith(b, "qoif"sv)) return "a QOI image";
  if (StartsWith(b, "%PDF"sv)) return "a PDF document";
  if (StartsWith(b, "RIFF"sv) && StartsWith(b, "WAVE"sv, 8)) return "WAV audio";
  if (StartsWith(b, "RIFF"sv) && StartsWith(b, "AVI "sv, 8)) return "an AVI video";
  if (b.size() >= 12 && StartsWith(b, "ftyp"sv, 4)) return IsoMediaName(b);
  // The base64 text of a PNG, JPEG or WebP: the client encoded the image twice.
  if (StartsWith(b, "iVBORw0KGgo"sv)) return "a PNG encoded in base64 twice";
  if (StartsWith(b, "/9j/"sv)) return "a JPEG encoded in base64 twice";
  if (StartsWith(b, "UklGR"sv)) return "a WebP encoded in base64 twice";
  return MarkupName(b);
}

}  // namespace

const char* ImageFormatName(ImageFormat format) {
  switch (format) {
    case ImageFormat::kPng:
      return "PNG";
    case ImageFormat::kJpeg:
      return "JPEG";
    case ImageFormat::kWebp:
      return "WebP";
  }
  return "?";
}

Result<ImageFormat> SniffImageFormat(std::span<const uint8_t> b) {
  if (StartsWith(b, "\x89PNG\r\n\x1A\n"sv)) return ImageFormat::kPng;
  if (StartsWith(b, "\xFF\xD8\xFF"sv)) return ImageFormat::kJpeg;
  if (StartsWith(b, "RIFF"sv) && StartsWith(b, "WEBP"sv, 8)) return ImageFormat::kWebp;
  constexpr const char* kTaken = ": images are taken as PNG, JPEG or WebP";
  if (const char* name = RefusedName(b)) {
    return InvalidArgument(std::string("the data is ") + name + kTaken);
  }
  std::string first;
  for (size_t i = 0; i < std::min<size_t>(b.size(), 8); ++i) {
    char hex[4];
    std::snprintf(hex, sizeof hex, " %02x", b[i]);
    first += hex;
  }
  return InvalidArgument("the data is not a PNG, JPEG or WebP image (its first bytes are" + first +
                         ")");
}

}  // namespace sparrow::vision
