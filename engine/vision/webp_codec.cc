// WebP through libwebp: still images, lossy or lossless; alpha dropped (MODE_RGB). libwebp
// returns errors (a status, or null), so nothing here jumps.
#include <webp/decode.h>

#include <string>

#include "engine/vision/image_codecs.h"
#include "engine/vision/image_decode.h"

namespace sparrow::vision::internal {
namespace {

Status ReadHeader(std::span<const uint8_t> bytes, WebPBitstreamFeatures* features,
                  ImageInfo* info) {
  const VP8StatusCode status = WebPGetFeatures(bytes.data(), bytes.size(), features);
  if (status == VP8_STATUS_NOT_ENOUGH_DATA) {
    return InvalidArgument("the WebP is truncated (its header is incomplete)");
  }
  if (status != VP8_STATUS_OK) {
    return InvalidArgument("the WebP is corrupt (libwebp status " + std::to_string(status) +
                           " reading its header)");
  }
  if (features->has_animation) {
    return InvalidArgument("the WebP is animated: send one frame as a still image");
  }
  info->format = ImageFormat::kWebp;
  info->width = features->width;
  info->height = features->height;
  return Status::Ok();
}

}  // namespace

Status ReadWebp(std::span<const uint8_t> bytes, const ImageLimits* limits, ImageInfo* info,
                Image* image) {
  WebPBitstreamFeatures features;
  SPARROW_RETURN_IF_ERROR(ReadHeader(bytes, &features, info));
  if (limits == nullptr) return Status::Ok();
  SPARROW_RETURN_IF_ERROR(CheckImageSize(*info, *limits));
  image->width = info->width;
  image->height = info->height;
  const size_t stride = static_cast<size_t>(info->width) * 3;
  image->rgb.assign(stride * static_cast<size_t>(info->height), 0);
  if (WebPDecodeRGBInto(bytes.data(), bytes.size(), image->rgb.data(), image->rgb.size(),
                        static_cast<int>(stride)) == nullptr) {
    return InvalidArgument("the WebP is truncated or corrupt (libwebp could not decode it)");
  }
  return Status::Ok();
}

}  // namespace sparrow::vision::internal
