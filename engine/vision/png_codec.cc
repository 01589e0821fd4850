// PNG through libpng 1.6. libpng reports errors by longjmp to the setjmp in RunPng, whose frame
// (as the C++ rules for setjmp ask) holds no object with a destructor: the state it fills
// lives in the callers' frames and is reached through pointers.
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "engine/vision/image_codecs.h"
#include "engine/vision/image_decode.h"

namespace sparrow::vision::internal {
namespace {

struct PngSource {
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t pos = 0;
  char error[160] = {};  // libpng's message, when it failed
};

void ReadBytes(png_structp png, png_bytep out, size_t n) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > src->size - src->pos) png_error(png, "read past the end of the data");
  std::memcpy(out, src->data + src->pos, n);
  src->pos += n;
}

[[noreturn]] void OnError(png_structp png, png_const_charp message) {
  auto* src = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(src->error, sizeof src->error, "%s", message);
  png_longjmp(png, 1);
}

// Warnings are about ancillary chunks libpng skipped; the pixels are whole.
void OnWarning(png_structp, png_const_charp) {}

// Each of libpng's allocations is bounded: a header may claim a chunk of gigabytes (a 45-byte
// file asked libpng 1.6.39 for 725 MB for its zTXt chunk), and libpng allocates before it
// reads. No chunk it keeps (8 MB, its own limit) nor a row of an image within the limits needs
// more; past it libpng sees "out of memory" and skips the chunk or fails.
constexpr png_alloc_size_t kMaxAllocation = png_alloc_size_t{16} << 20;

png_voidp Allocate(png_structp, png_alloc_size_t size) {
  return size > kMaxAllocation ? nullptr : std::malloc(size);
}

void Release(png_structp, png_voidp p) {
  std::free(p);
}

// What RunPng hands back besides libpng's verdict.
struct PngRun {
  const ImageLimits* limits = nullptr;  // null: read the header only
  ImageInfo info;
  Status size_status;
  Image* image = nullptr;
};

// Reads the header into run->info and, with limits, the pixels into *run->image (RGB8 with
// the channels stb_image gives for 3 components). False when libpng failed (src->error says
// why) or the size is over the limits (run->size_status).
bool RunPng(png_structp png, png_infop info, PngRun* run) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  run->info.format = ImageFormat::kPng;
  run->info.width = static_cast<int32_t>(png_get_image_width(png, info));
  run->info.height = static_cast<int32_t>(png_get_image_height(png, info));
  if (run->limits == nullptr) return true;
  run->size_status = CheckImageSize(run->info, *run->limits);
  if (!run->size_status.ok()) return false;

  const png_byte color = png_get_color_type(png, info);
  const png_byte depth = png_get_bit_depth(png, info);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (depth == 16) png_set_strip_16(png);  // the high byte, as stb_image's 16-to-8
  png_set_strip_alpha(png);                // alpha and tRNS dropped, not blended
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const size_t row_bytes = static_cast<size_t>(run->info.width) * 3;
  if (png_get_rowbytes(png, info) != row_bytes) png_error(png, "unexpected row layout");

  Image* image = run->image;
  image->width = run->info.width;
  image->height = run->info.height;
  image->rgb.assign(row_bytes * static_cast<size_t>(image->height), 0);
  // Interlaced images come in passes over the same rows, as png_read_image reads them.
  for (int pass = 0; pass < passes; ++pass) {
    for (int32_t y = 0; y < image->height; ++y) {
      png_read_row(png, image->rgb.data() + row_bytes * static_cast<size_t>(y), nullptr);
    }
  }
  png_read_end(png, nullptr);  // the rest, through IEND: a file cut after its pixels fails too
  return true;
}

}  // namespace

Status ReadPng(std::span<const uint8_t> bytes, const ImageLimits* limits, ImageInfo* info,
               Image* image) {
  PngSource src{bytes.data(), bytes.size(), 0, {}};
  png_structp png = png_create_read_struct_2(PNG_LIBPNG_VER_STRING, &src, OnError, OnWarning,
                                             nullptr, Allocate, Release);
  if (png == nullptr) return ResourceExhausted("libpng could not start");
  png_infop png_info = png_create_info_struct(png);
  if (png_info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return ResourceExhausted("libpng could not start");
  }
  png_set_read_fn(png, &src, ReadBytes);
  // libpng's defaults bound the rest: 8 MB for one ancillary chunk inflated (text, ICC),
  // 1000 ancillary chunks. Its side limits (a million) stay above ours, so that our check
  // after the header gives the message.
  PngRun run;
  run.limits = limits;
  run.image = image;
  const bool ok = RunPng(png, png_info, &run);
  png_destroy_read_struct(&png, &png_info, nullptr);
  if (!run.size_status.ok()) return run.size_status;
  if (!ok) {
    return InvalidArgument(std::string("the PNG is truncated or corrupt (libpng: ") + src.error +
                           ")");
  }
  *info = run.info;
  return Status::Ok();
}

}  // namespace sparrow::vision::internal
