#pragma once
// Which image format some bytes hold, from their magic bytes (never from a name or a MIME type
// the client gave). Pure functions, thread-safe.
#include <cstdint>
#include <span>

#include "engine/common/result.h"
#include "engine/vision/image.h"

namespace sparrow::vision {

// PNG, JPEG or WebP; InvalidArgument for anything else, naming what it looks like ("a GIF
// image", "SVG or other XML text", "a PNG encoded in base64 twice") or its first bytes.
Result<ImageFormat> SniffImageFormat(std::span<const uint8_t> bytes);

}  // namespace sparrow::vision
