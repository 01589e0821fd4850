#include "engine/vision/image_decode.h"

#include <string>

#include "engine/vision/image_codecs.h"
#include "engine/vision/image_format.h"

namespace sparrow::vision {
namespace {

// The decoder of the format the magic bytes name (image_codecs.h: `limits` null reads the
// header only).
Status Read(std::span<const uint8_t> bytes, const ImageLimits* limits, ImageInfo* info,
            Image* image) {
  SPARROW_ASSIGN_OR_RETURN(const ImageFormat format, SniffImageFormat(bytes));
  switch (format) {
    case ImageFormat::kPng:
      return internal::ReadPng(bytes, limits, info, image);
    case ImageFormat::kJpeg:
      return internal::ReadJpeg(bytes, limits, info, image);
    case ImageFormat::kWebp:
      return internal::ReadWebp(bytes, limits, info, image);
  }
  return Internal("unknown image format");
}

}  // namespace

Status CheckImageSize(const ImageInfo& info, const ImageLimits& limits) {
  const std::string what = std::string("the ") + ImageFormatName(info.format) + " is " +
                           std::to_string(info.width) + " x " + std::to_string(info.height) +
                           " pixels";
  if (info.width <= 0 || info.height <= 0) return InvalidArgument(what + ": it has no pixels");
  const int64_t pixels = int64_t{info.width} * info.height;
  if (pixels > limits.max_pixels) {
    return InvalidArgument(what + " (" + std::to_string(pixels) + "), more than the limit of " +
                           std::to_string(limits.max_pixels) + " pixels");
  }
  if (info.width > limits.max_side || info.height > limits.max_side) {
    return InvalidArgument(what + ", a side longer than the limit of " +
                           std::to_string(limits.max_side) + " pixels");
  }
  return Status::Ok();
}

Status CheckImageBytes(size_t size, const ImageLimits& limits) {
  if (size == 0) return InvalidArgument("the image is empty (0 bytes)");
  if (size > limits.max_bytes) {
    return InvalidArgument("the image is " + std::to_string(size) +
                           " bytes, more than the limit of " + std::to_string(limits.max_bytes) +
                           " bytes");
  }
  return Status::Ok();
}

Result<ImageInfo> ReadImageInfo(std::span<const uint8_t> bytes) {
  if (bytes.empty()) return InvalidArgument("the image is empty (0 bytes)");
  ImageInfo info;
  SPARROW_RETURN_IF_ERROR(Read(bytes, nullptr, &info, nullptr));
  return info;
}

Result<Image> DecodeImage(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  SPARROW_RETURN_IF_ERROR(CheckImageBytes(bytes.size(), limits));
  ImageInfo info;
  Image image;
  SPARROW_RETURN_IF_ERROR(Read(bytes, &limits, &info, &image));
  return image;
}

}  // namespace sparrow::vision
