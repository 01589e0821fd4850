// JPEG through libjpeg-turbo (the libjpeg 6.2 API). libjpeg reports errors through error_exit,
// which must not return: it longjmps to the setjmp in RunJpeg, whose frame (as the C++ rules
// for setjmp ask) holds no object with a destructor. Its corrupt-data warnings (a truncated
// file, a bad Huffman code: libjpeg would fill the rest with grey) leave the same way.
#include <cstdio>  // jpeglib.h needs FILE and size_t first
// clang-format off
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include <csetjmp>
#include <cstring>
#include <string>

#include "engine/vision/image_codecs.h"
#include "engine/vision/image_decode.h"

namespace sparrow::vision::internal {
namespace {

// A progressive file may repeat scans without end, each a pass over the whole image; real
// files have about ten.
constexpr int kMaxScans = 500;
// libjpeg's working memory (the coefficients a progressive file keeps for the whole image: two
// bytes a component a pixel) may reach this many bytes per pixel of the limit.
constexpr int64_t kWorkingBytesPerPixel = 8;

// The handlers a decompression is given; jpeg_create_decompress keeps `err` but clears
// `progress`, so RunJpeg sets that after it.
struct JpegErrors {
  jpeg_error_mgr mgr;  // first: libjpeg hands back a pointer to it
  jpeg_progress_mgr progress;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = {};
};

[[noreturn]] void OnErrorExit(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

// Level -1 is a warning about corrupt data, after which libjpeg would go on with made-up
// pixels; only the harmless ones are let through. Traces (levels >= 0) are dropped.
void OnMessage(j_common_ptr cinfo, int level) {
  if (level >= 0) return;
  const int code = cinfo->err->msg_code;
  if (code == JWRN_EXTRANEOUS_DATA || code == JWRN_JFIF_MAJOR) return;  // nothing lost
  OnErrorExit(cinfo);
}

void OnProgress(j_common_ptr cinfo) {
  auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->input_scan_number > kMaxScans) {
    auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
    std::snprintf(errors->message, sizeof errors->message, "more than %d scans", kMaxScans);
    std::longjmp(errors->jump, 1);
  }
}

// stb_image's x * y / 255, rounded: how it turns CMYK (and YCCK) into RGB.
uint8_t Blinn(uint8_t x, uint8_t y) {
  const unsigned t = unsigned{x} * y + 128;
  return static_cast<uint8_t>((t + (t >> 8)) >> 8);
}

// What RunJpeg hands back besides libjpeg's verdict.
struct JpegRun {
  const ImageLimits* limits = nullptr;  // null: read the header only
  ImageInfo info;
  Status size_status;
  Image* image = nullptr;
};

bool RunJpeg(jpeg_decompress_struct* cinfo, JpegErrors* errors, std::span<const uint8_t> bytes,
             JpegRun* run) {
  if (setjmp(errors->jump)) return false;
  jpeg_create_decompress(cinfo);
  cinfo->progress = &errors->progress;
  jpeg_mem_src(cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(cinfo, TRUE);
  run->info.format = ImageFormat::kJpeg;
  run->info.width = static_cast<int32_t>(cinfo->image_width);
  run->info.height = static_cast<int32_t>(cinfo->image_height);
  if (run->limits == nullptr) return true;
  run->size_status = CheckImageSize(run->info, *run->limits);
  if (!run->size_status.ok()) return false;

  cinfo->mem->max_memory_to_use =
      static_cast<long>(run->limits->max_pixels * kWorkingBytesPerPixel);
  // CMYK and YCCK come out as CMYK and are converted as stb_image does; the rest as RGB
  // (grey expanded by libjpeg-turbo).
  const bool cmyk = cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK;
  cinfo->out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  jpeg_start_decompress(cinfo);
  const size_t channels = cmyk ? 4 : 3;
  if (static_cast<size_t>(cinfo->output_components) != channels) {
    ERREXIT(cinfo, JERR_CONVERSION_NOTIMPL);
  }
  Image* image = run->image;
  image->width = run->info.width;
  image->height = run->info.height;
  const size_t row_bytes = static_cast<size_t>(image->width) * 3;
  // A CMYK row is decoded where its RGB row goes and converted in place, left to right (the
  // RGB of pixel x never reaches the CMYK of pixel x + 1): the last row needs width bytes more.
  image->rgb.assign(row_bytes * static_cast<size_t>(image->height) +
                        (cmyk ? static_cast<size_t>(image->width) : 0),
                    0);
  while (cinfo->output_scanline < cinfo->output_height) {
    uint8_t* row = image->rgb.data() + row_bytes * cinfo->output_scanline;
    JSAMPROW rows[1] = {row};
    jpeg_read_scanlines(cinfo, rows, 1);
    if (!cmyk) continue;
    for (size_t x = 0; x < static_cast<size_t>(image->width); ++x) {
      const uint8_t c = row[4 * x], m = row[4 * x + 1], y = row[4 * x + 2], k = row[4 * x + 3];
      row[3 * x] = Blinn(c, k);
      row[3 * x + 1] = Blinn(m, k);
      row[3 * x + 2] = Blinn(y, k);
    }
  }
  jpeg_finish_decompress(cinfo);
  image->rgb.resize(row_bytes * static_cast<size_t>(image->height));
  return true;
}

}  // namespace

Status ReadJpeg(std::span<const uint8_t> bytes, const ImageLimits* limits, ImageInfo* info,
                Image* image) {
  jpeg_decompress_struct cinfo;
  std::memset(&cinfo, 0, sizeof cinfo);
  JpegErrors errors;
  cinfo.err = jpeg_std_error(&errors.mgr);
  errors.mgr.error_exit = OnErrorExit;
  errors.mgr.emit_message = OnMessage;
  std::memset(&errors.progress, 0, sizeof errors.progress);
  errors.progress.progress_monitor = OnProgress;
  JpegRun run;
  run.limits = limits;
  run.image = image;
  const bool ok = RunJpeg(&cinfo, &errors, bytes, &run);
  jpeg_destroy_decompress(&cinfo);
  if (!run.size_status.ok()) return run.size_status;
  if (!ok) {
    return InvalidArgument(std::string("the JPEG is truncated or corrupt (libjpeg: ") +
                           errors.message + ")");
  }
  *info = run.info;
  return Status::Ok();
}

}  // namespace sparrow::vision::internal
