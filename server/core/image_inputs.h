#pragma once
// The images of a chat request (OpenAI's image_url parts; whatever a frontend takes) checked
// and decoded the same for every frontend, in ResolveGeneration: so on HTTP's preparation pool,
// never on an io thread. First every header (format, size) against the limits and the request's
// pixels together, so that a bomb is refused before any pixel buffer exists; then the decodes.
// Each error names the part the client sent. Pure functions, thread-safe.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/common/status.h"
#include "engine/vision/image.h"

namespace sparrow::server {

// An image as a frontend parsed it, not yet decoded.
struct ImageInput {
  std::string bytes;   // the file (PNG, JPEG or WebP) as the client sent it
  size_t message = 0;  // its message in GenerationSpec::messages
  size_t offset = 0;   // in that message's content: the text before it
  std::string field;   // the part as the client names it: "messages[1].content[2]"
};

// The decoded pixels of a request's images together: 48 Mi pixels, 144 MiB as RGB8, the room
// of three full-size images (vision::ImageLimits) or four 12-megapixel phone photos.
inline constexpr int64_t kMaxRequestImagePixels = int64_t{48} << 20;

// The images decoded in order into `*out`; or InvalidArgument with `*param` the part at fault.
Status DecodeImageInputs(const std::vector<ImageInput>& images, const vision::ImageLimits& limits,
                         std::vector<vision::Image>* out, std::string* param);

}  // namespace sparrow::server
