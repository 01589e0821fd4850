#pragma once
// The three decoders behind DecodeImage (internal to engine/vision). Each reads its header
// with its library, checks it with CheckImageSize before it allocates the pixels, and turns
// every library failure (libpng's longjmp, libjpeg's error_exit and its corrupt-data warnings,
// libwebp's null) into InvalidArgument. `bytes` is known to start with the format's magic.
#include <cstdint>
#include <span>

#include "engine/common/result.h"
#include "engine/vision/image.h"

namespace sparrow::vision::internal {

// Each reads the header into `*info`; with `limits` (not null) it checks the size and decodes
// into `*image`, else it stops after the header.
Status ReadPng(std::span<const uint8_t> bytes, const ImageLimits* limits, ImageInfo* info,
               Image* image);
Status ReadJpeg(std::span<const uint8_t> bytes, const ImageLimits* limits, ImageInfo* info,
                Image* image);
Status ReadWebp(std::span<const uint8_t> bytes, const ImageLimits* limits, ImageInfo* info,
                Image* image);

}  // namespace sparrow::vision::internal
