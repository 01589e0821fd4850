#pragma once
// DecodeImage: a PNG, JPEG or WebP file's bytes to a bounded RGB8 image, through the Debian-
// packaged libraries (libpng, libjpeg-turbo, libwebp); no home-made decoder. The type comes
// from the magic bytes. Every failure is InvalidArgument with a message a client can act on,
// never a crash: an empty, oversized, unsupported, truncated or corrupt image; an image whose
// header is over the limits is refused before any pixel buffer is allocated. Thread-safe (the
// libraries keep no global state).
#include <cstdint>
#include <span>

#include "engine/common/result.h"
#include "engine/vision/image.h"

namespace sparrow::vision {

// The format and size from the header alone (no pixel decoded, nothing large allocated).
Result<ImageInfo> ReadImageInfo(std::span<const uint8_t> bytes);

// The decoded image, with the channels as llama.cpp's libmtmd loads them (image.h).
Result<Image> DecodeImage(std::span<const uint8_t> bytes, const ImageLimits& limits = {});

// Ok when an image of `size` bytes is within `limits` (and not empty); else InvalidArgument.
Status CheckImageBytes(size_t size, const ImageLimits& limits);
// Ok when a header's width x height is within `limits` (and not empty); else InvalidArgument
// naming the size and the limit it is over.
Status CheckImageSize(const ImageInfo& info, const ImageLimits& limits);

}  // namespace sparrow::vision
