#pragma once
// The pixels an encoder takes, made from a decoded image as llama.cpp d32676d7's libmtmd makes
// them (mtmd-image.cpp): the resize with its arithmetic (float coordinates, values truncated to
// bytes), the aspect-keeping fit with black padding, and the mean/std normalisation.
// Pure functions, thread-safe.
#include <cstdint>
#include <vector>

#include "engine/vision/clip_model.h"
#include "engine/vision/image.h"

namespace sparrow::vision {

// `src` resized to width x height by bilinear interpolation with corners aligned (libmtmd's
// RESIZE_ALGO_BILINEAR). `src` must not be empty.
Image ResizeBilinear(const Image& src, int32_t width, int32_t height);

// `src` scaled to fit a size x size square keeping its aspect ratio (the scaled sides rounded
// up), bilinearly, and centred on black (libmtmd's PAD_CEIL). An image of that size already is
// copied as is.
Image FitIntoSquare(const Image& src, int32_t size);

// The image as gemma3's SigLIP takes it: fitted into image_size x image_size, then each channel
// (v / 255 - mean) / std, planar: out[(c * size + y) * size + x].
std::vector<float> PreprocessGemma3(const Image& image, const ClipHparams& hp);

}  // namespace sparrow::vision
