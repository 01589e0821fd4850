#include "api/openai/openai_image.h"

#include <algorithm>
#include <cctype>

#include "api/openai/base64.h"
#include "api/openai/json_fields.h"

namespace sparrow::openai {
namespace {

using json = nlohmann::json;

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), s.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         });
}

bool EndsWithNoCase(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && StartsWithNoCase(s.substr(s.size() - suffix.size()), suffix);
}

// The url of the part: image_url {"url": ..., "detail": ...} or image_url "...".
Status UrlAndDetail(const json& image_url, const std::string& field, const std::string** url,
                    std::string* detail, std::string* param) {
  if (image_url.is_string()) {
    *url = image_url.get_ptr<const std::string*>();
    return Status::Ok();
  }
  const json* u = image_url.is_object() ? Member(image_url, "url") : nullptr;
  if (u == nullptr || !u->is_string()) {
    return Bad(param, field,
               "must have image_url {\"url\": \"data:image/png;base64,...\"} (or image_url as "
               "that string)");
  }
  *url = u->get_ptr<const std::string*>();
  const json* d = Member(image_url, "detail");
  if (d != nullptr) {
    if (!d->is_string() || (*d != "auto" && *d != "low" && *d != "high")) {
      return Bad(param, field, "has image_url.detail other than \"auto\", \"low\" or \"high\"");
    }
    *detail = d->get<std::string>();
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> DecodeImageDataUrl(std::string_view url, size_t max_bytes) {
  if (StartsWithNoCase(url, "http://") || StartsWithNoCase(url, "https://")) {
    return InvalidArgument(
        "is a remote image URL: remote image URLs are not fetched; send the "
        "image as a data: URL (data:image/png;base64,...)");
  }
  if (!StartsWithNoCase(url, "data:")) {
    return InvalidArgument("must have a data: URL (data:image/png;base64,...) as its url");
  }
  const size_t comma = url.find(',');
  if (comma == std::string_view::npos) {
    return InvalidArgument("has a data: URL without the ',' before its data");
  }
  // data:[<media type>][;<parameter>]*;base64,<data>
  if (!EndsWithNoCase(url.substr(0, comma), ";base64")) {
    return InvalidArgument("has a data: URL that is not base64 (data:image/png;base64,...)");
  }
  Result<std::string> bytes = Base64Decode(url.substr(comma + 1), max_bytes);
  if (!bytes.ok()) {
    return Status(bytes.status().code(), "has a data: URL whose data " + bytes.status().message());
  }
  return bytes;
}

Status ParseImagePart(const json& part, const std::string& field, ImageBudget* budget,
                      ImagePartIn* out, std::string* param) {
  const json* image_url = Member(part, "image_url");
  const std::string* url = nullptr;
  if (image_url == nullptr) {
    return Bad(param, field, "must have image_url {\"url\": \"data:image/png;base64,...\"}");
  }
  SPARROW_RETURN_IF_ERROR(UrlAndDetail(*image_url, field, &url, &out->detail, param));
  if (budget->images >= kMaxRequestImages) {
    return Bad(param, field,
               "is one image too many: a request may carry at most " +
                   std::to_string(kMaxRequestImages) + " images");
  }
  Result<std::string> bytes = DecodeImageDataUrl(*url, kMaxRequestImageBytes - budget->bytes);
  if (!bytes.ok()) {
    if (bytes.status().code() == StatusCode::kOutOfRange) {
      return Bad(param, field,
                 "takes the request's images past " + std::to_string(kMaxRequestImageBytes) +
                     " bytes (the limit of a request's images together)");
    }
    return Bad(param, field, bytes.status().message());
  }
  ++budget->images;
  budget->bytes += bytes->size();
  out->bytes = std::move(bytes).value();
  out->field = field;
  return Status::Ok();
}

}  // namespace sparrow::openai
