// libFuzzer target for the image decoders (engine/vision: libpng, libjpeg-turbo, libwebp
// behind DecodeImage): any bytes must decode into an image within the limits, whose header
// ReadImageInfo reads alike, or be refused with InvalidArgument; never a crash, a leak or an
// allocation past the limits.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "engine/vision/image_decode.h"

namespace {

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "image_decode_fuzz: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sparrow::vision;
  // Small limits keep each input fast; the checks are the same at any size.
  ImageLimits limits;
  limits.max_bytes = size_t{1} << 20;
  limits.max_pixels = int64_t{1} << 20;
  limits.max_side = 4096;
  const std::span<const uint8_t> bytes(data, size);
  sparrow::Result<ImageInfo> info = ReadImageInfo(bytes);
  sparrow::Result<Image> image = DecodeImage(bytes, limits);
  if (!image.ok()) {
    if (image.status().code() != sparrow::StatusCode::kInvalidArgument) Fail("not InvalidArgument");
    return 0;
  }
  const Image& im = *image;
  if (im.width <= 0 || im.height <= 0 || im.width > limits.max_side ||
      im.height > limits.max_side || int64_t{im.width} * im.height > limits.max_pixels) {
    Fail("an image outside the limits");
  }
  if (im.rgb.size() != static_cast<size_t>(im.width) * static_cast<size_t>(im.height) * 3) {
    Fail("rgb is not width * height * 3 bytes");
  }
  if (!info.ok() || info->width != im.width || info->height != im.height) {
    Fail("ReadImageInfo disagrees with DecodeImage");
  }
  // Every byte read, so that ASan sees a buffer shorter than it claims.
  unsigned sum = 0;
  for (uint8_t v : im.rgb) sum += v;
  return static_cast<int>(sum & 0);
}
