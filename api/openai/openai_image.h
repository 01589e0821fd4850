#pragma once
// OpenAI's image content parts: {"type": "image_url", "image_url": {"url": "data:image/png;
// base64,...", "detail": "auto"}} and the string form "image_url": "data:..." some clients send.
// The image comes as a data: URL; remote http(s) URLs are refused, since a device must not be
// made to fetch for a client. Only the bytes are taken here (the server decodes them: PNG,
// JPEG, WebP, whatever the URL's MIME type says). A request's images are bounded in number and
// bytes before their base64 is decoded. Errors name the part ("messages[1].content[2]") and set
// `*param` to it. Pure functions, thread-safe.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "api/openai/openai_types.h"

namespace sparrow::openai {

inline constexpr size_t kMaxRequestImages = 16;
// Decoded bytes of all a request's images (the body limit usually binds first).
inline constexpr size_t kMaxRequestImageBytes = size_t{32} << 20;

// What a request's images have taken of the bounds so far.
struct ImageBudget {
  size_t images = 0;
  size_t bytes = 0;
};

// The bytes a data: URL carries (base64, at most `max_bytes`). InvalidArgument, in words that
// follow the part's name: remote URLs ("remote image URLs are not fetched; ..."), other
// schemes, a data: URL that is not base64, bad base64; OutOfRange when its data would decode to
// more than `max_bytes` (refused before decoding).
Result<std::string> DecodeImageDataUrl(std::string_view url, size_t max_bytes);

// `part` is an object whose "type" is "image_url", at `field`; `*out` gets its bytes, detail
// and field (the caller sets its offset).
Status ParseImagePart(const nlohmann::json& part, const std::string& field, ImageBudget* budget,
                      ImagePartIn* out, std::string* param);

}  // namespace sparrow::openai
