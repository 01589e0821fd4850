#pragma once
// The gemma3 vision encoder: SigLIP (patch embedding, learned positions, pre-LN blocks with
// full bidirectional attention and a GELU MLP, the final layer norm), then gemma3's projector
// (average pooling to the token grid, the soft-embedding RMS norm, the input projection), with
// llama.cpp d32676d7's CPU arithmetic (clip.cpp's graph, flash attention off): its matrix
// products, norms, softmax and fp16-table GELU through engine/kernels. Thread-safe: every call
// has its own buffers; the model is only read.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/common/result.h"
#include "engine/vision/clip_model.h"
#include "engine/vision/image.h"

namespace sparrow::kernels {
class ThreadPool;
}

namespace sparrow::vision {

// One image's embeddings: n_tokens rows of n_embd (the text model's width), in prompt order.
struct ImageEmbeddings {
  int64_t n_tokens = 0;
  int64_t n_embd = 0;
  std::vector<float> data;
};

// The embeddings of pixels as PreprocessGemma3 makes them (3 planes of image_size^2).
// InvalidArgument when `pixels` has another size. `pool` may be null (one thread).
Result<ImageEmbeddings> EncodeGemma3Pixels(const ClipModel& model, std::span<const float> pixels,
                                           kernels::ThreadPool* pool);

// A decoded image preprocessed and encoded.
Result<ImageEmbeddings> EncodeImage(const ClipModel& model, const Image& image,
                                    kernels::ThreadPool* pool);

}  // namespace sparrow::vision
