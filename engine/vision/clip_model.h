#pragma once
// ClipModel: a projector GGUF as llama.cpp's `convert_hf_to_gguf.py --mmproj` writes it (the
// clip.* keys, the v.* vision tower, the mm.* projector), loaded and checked: every
// hyper-parameter in range, every tensor present with the shape and a type we compute with.
// Errors name the file and the key or tensor at fault; projector types we do not run yet are
// refused by name. Only the gemma3 projector (SigLIP + average pooling + soft-embedding norm +
// input projection) runs so far. Immutable after Load; safe to encode with from many threads.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/common/result.h"
#include "engine/kernels/matmul.h"
#include "engine/model/gguf_file.h"

namespace sparrow::vision {

// The projector families (clip.projector_type) Sparrow encodes.
enum class ProjectorType { kGemma3 };
const char* ProjectorTypeName(ProjectorType type);  // as the GGUF spells it: "gemma3"

struct ClipHparams {
  ProjectorType projector = ProjectorType::kGemma3;
  int64_t image_size = 0;  // the square the image is resized to (clip.vision.image_size)
  int64_t patch_size = 0;
  int64_t n_embd = 0;  // the tower's width
  int64_t n_ff = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t head_dim = 0;  // n_embd / n_head unless the file says
  float eps = 1e-6f;     // of the layer norms, and of the projector's RMS norm
  std::array<float, 3> image_mean{};
  std::array<float, 3> image_std{};
  int64_t n_merge = 4;      // gemma3: the pooling kernel (patches per token, per side)
  int64_t n_text_embd = 0;  // the projector's output: the text model's embedding width

  int64_t patches_per_side() const { return image_size / patch_size; }
  int64_t n_patches() const { return patches_per_side() * patches_per_side(); }
  int64_t tokens_per_side() const { return patches_per_side() / n_merge; }
  // The embeddings one image becomes in the prompt.
  int64_t n_image_tokens() const { return tokens_per_side() * tokens_per_side(); }
};

// One pre-LN encoder block. Biases are empty when the file has none (llama.cpp runs without).
struct ClipLayer {
  std::vector<float> ln1_w, ln1_b, ln2_w, ln2_b;
  kernels::WeightMatrix q, k, v, o, up, down;
  std::vector<float> q_b, k_b, v_b, o_b, up_b, down_b;
};

class ClipModel {
 public:
  // Opens and checks the projector file at `path`.
  static Result<std::unique_ptr<ClipModel>> Load(const std::string& path);
  // The same from an opened file (tests write theirs in memory); the model keeps `file`.
  static Result<std::unique_ptr<ClipModel>> FromGguf(std::unique_ptr<GgufFile> file);

  const std::string& path() const { return file_->path(); }
  const ClipHparams& hparams() const { return hp_; }

  // The tower: the patch embedding (a convolution of stride patch_size written as a matrix of
  // n_embd rows of 3 * patch * patch, in channel, row, column order; F16, as ggml's
  // convolution computes whatever the file's type), the learned positions
  // (n_patches x n_embd), the blocks and the final layer norm.
  const kernels::WeightMatrix& patch_embd() const { return patch_embd_; }
  const std::vector<float>& patch_bias() const { return patch_bias_; }
  const std::vector<float>& positions() const { return positions_; }
  const std::vector<ClipLayer>& layers() const { return layers_; }
  const std::vector<float>& post_ln_w() const { return post_ln_w_; }
  const std::vector<float>& post_ln_b() const { return post_ln_b_; }
  // gemma3's projector: the RMS norm's weight and mm.input_projection transposed (n_text_embd
  // rows of n_embd, in the file's element type), so that it is an ordinary weight matrix.
  const std::vector<float>& soft_emb_norm() const { return soft_emb_norm_; }
  const kernels::WeightMatrix& input_proj() const { return input_proj_; }

 private:
  ClipModel() = default;
  Status ReadHparams();
  Status BindTensors();

  std::unique_ptr<GgufFile> file_;
  ClipHparams hp_;
  kernels::WeightMatrix patch_embd_;
  std::vector<uint16_t> patch_embd_f16_;  // an F32 kernel rounded to F16, as ggml rounds it
  std::vector<float> patch_bias_, positions_, post_ln_w_, post_ln_b_, soft_emb_norm_;
  std::vector<ClipLayer> layers_;
  std::vector<uint8_t> input_proj_bytes_;  // the transposed copy input_proj_ points into
  kernels::WeightMatrix input_proj_;
};

}  // namespace sparrow::vision
