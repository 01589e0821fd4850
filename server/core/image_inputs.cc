#include "server/core/image_inputs.h"

#include "engine/vision/image_decode.h"

namespace sparrow::server {
namespace {

Status AtPart(const ImageInput& image, const Status& why, std::string* param) {
  *param = image.field;
  return Status(why.code(), "'" + image.field + "': " + why.message());
}

}  // namespace

Status DecodeImageInputs(const std::vector<ImageInput>& images, const vision::ImageLimits& limits,
                         std::vector<vision::Image>* out, std::string* param) {
  int64_t pixels = 0;
  for (const ImageInput& image : images) {
    const auto bytes = vision::ImageBytes(image.bytes);
    if (Status size = vision::CheckImageBytes(bytes.size(), limits); !size.ok()) {
      return AtPart(image, size, param);
    }
    Result<vision::ImageInfo> info = vision::ReadImageInfo(bytes);
    if (!info.ok()) return AtPart(image, info.status(), param);
    if (Status size = vision::CheckImageSize(*info, limits); !size.ok()) {
      return AtPart(image, size, param);
    }
    pixels += int64_t{info->width} * info->height;
    if (pixels > kMaxRequestImagePixels) {
      return AtPart(image,
                    InvalidArgument("takes the request's images past " +
                                    std::to_string(kMaxRequestImagePixels) +
                                    " pixels (the limit of a request's images together)"),
                    param);
    }
  }
  out->clear();
  out->reserve(images.size());
  for (const ImageInput& image : images) {
    Result<vision::Image> decoded = vision::DecodeImage(vision::ImageBytes(image.bytes), limits);
    if (!decoded.ok()) return AtPart(image, decoded.status(), param);
    out->push_back(std::move(decoded).value());
  }
  return Status::Ok();
}

}  // namespace sparrow::server
