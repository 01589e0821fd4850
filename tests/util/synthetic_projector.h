#pragma once
// A small synthetic projector file of the gemma3 family (SigLIP tower + gemma3's projector)
// with random weights, in the layout llama.cpp d32676d7's clip.cpp loads: the clip.* keys and
// the v.* / mm.* tensors convert_hf_to_gguf.py --mmproj writes for Gemma 3. The defaults are
// tests/golden/vision/README.md's: image 112, patch 14 (8 x 8 patches), width 64, FFN 128,
// 2 blocks of 4 heads, pooled 2 x 2 into 16 tokens of 256 (synth-gemma3-f32.gguf's width).
// A pure function of the spec (the same seed gives the same bytes); thread-safe.
#include <cstdint>
#include <string>

#include "engine/common/status.h"
#include "engine/common/tensor_type.h"
#include "tests/util/gguf_writer.h"

namespace sparrow::testing {

struct ProjectorSpec {
  uint64_t seed = 1;
  uint32_t image_size = 112;
  uint32_t patch_size = 14;
  uint32_t n_embd = 64;
  uint32_t n_ff = 128;
  uint32_t n_layer = 2;
  uint32_t n_head = 4;
  uint32_t n_merge = 2;  // clip.vision.projector.scale_factor
  uint32_t n_text_embd = 256;
  // The matrices' type (F32 or F16); norms, biases and positions are F32, as the converter
  // writes them.
  TensorType matrix_type = TensorType::kF32;
};

GgufWriter MakeGemma3Projector(const ProjectorSpec& spec);
Status WriteGemma3Projector(const ProjectorSpec& spec, const std::string& path);

}  // namespace sparrow::testing
