#include "tests/util/synthetic_projector.h"

#include <cmath>
#include <random>
#include <vector>

namespace sparrow::testing {
namespace {

// Values u in [-1, 1) from (seed, name) only, through std::seed_seq and std::mt19937_64 (fully
// specified by the standard), as center + half_width * u.
std::vector<float> Draw(uint64_t seed, const std::string& name, uint64_t n, float center,
                        float half_width) {
  std::vector<uint32_t> seeds = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  for (unsigned char c : name) seeds.push_back(c);
  std::seed_seq seq(seeds.begin(), seeds.end());
  std::mt19937_64 gen(seq);
  std::vector<float> v(n);
  for (float& x : v) {
    const float u = static_cast<float>(gen() >> 40) * (2.0f / 16777216.0f) - 1.0f;
    x = center + half_width * u;
  }
  return v;
}

class Tensors {
 public:
  Tensors(GgufWriter& w, const ProjectorSpec& s) : w_(w), s_(s) {}

  // A matrix of the spec's type: about unit-variance outputs for unit-variance inputs, the
  // fan-in being every dimension but the last.
  void Matrix(const std::string& name, std::vector<uint64_t> dims) {
    uint64_t fan_in = 1, n = 1;
    for (size_t i = 0; i < dims.size(); ++i) {
      n *= dims[i];
      if (i + 1 < dims.size()) fan_in *= dims[i];
    }
    const float scale = 1.7f / std::sqrt(static_cast<float>(fan_in));
    w_.AddTensorF32(name, s_.matrix_type, std::move(dims), Draw(s_.seed, name, n, 0.0f, scale));
  }
  void Vector(const std::string& name, uint64_t n, float center, float half_width) {
    w_.AddTensorF32(name, TensorType::kF32, {n}, Draw(s_.seed, name, n, center, half_width));
  }

 private:
  GgufWriter& w_;
  const ProjectorSpec& s_;
};

}  // namespace

GgufWriter MakeGemma3Projector(const ProjectorSpec& s) {
  GgufWriter w;
  w.AddString("general.architecture", "clip");
  w.AddString("general.name", "synthetic gemma3 projector");
  w.AddU32("general.file_type", s.matrix_type == TensorType::kF16 ? 1 : 0);
  w.AddString("clip.projector_type", "gemma3");
  w.AddBool("clip.has_vision_encoder", true);
  w.AddBool("clip.use_gelu", true);
  w.AddU32("clip.vision.image_size", s.image_size);
  w.AddU32("clip.vision.patch_size", s.patch_size);
  w.AddU32("clip.vision.embedding_length", s.n_embd);
  w.AddU32("clip.vision.feed_forward_length", s.n_ff);
  w.AddU32("clip.vision.projection_dim", s.n_text_embd);
  w.AddU32("clip.vision.block_count", s.n_layer);
  w.AddU32("clip.vision.attention.head_count", s.n_head);
  w.AddF32("clip.vision.attention.layer_norm_epsilon", 1e-6f);
  // Not SigLIP's 0.5s: distinct per channel, so that a channel mix-up shows.
  w.AddArray<float>("clip.vision.image_mean", {0.48f, 0.46f, 0.41f});
  w.AddArray<float>("clip.vision.image_std", {0.27f, 0.26f, 0.28f});
  w.AddU32("clip.vision.projector.scale_factor", s.n_merge);

  Tensors t(w, s);
  const uint64_t e = s.n_embd, p = s.patch_size;
  const uint64_t side = s.image_size / s.patch_size;
  // The patch embedding is kept F16 or F32 as the matrices, like the converter's.
  t.Matrix("v.patch_embd.weight", {p, p, 3, e});
  t.Vector("v.patch_embd.bias", e, 0.0f, 0.1f);
  w.AddTensorF32("v.position_embd.weight", TensorType::kF32, {e, side * side},
                 Draw(s.seed, "v.position_embd.weight", e * side * side, 0.0f, 0.5f));
  for (uint32_t il = 0; il < s.n_layer; ++il) {
    const std::string pre = "v.blk." + std::to_string(il) + ".";
    for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_out"}) {
      t.Matrix(pre + m + ".weight", {e, e});
      t.Vector(pre + m + ".bias", e, 0.0f, 0.1f);
    }
    t.Vector(pre + "ln1.weight", e, 1.0f, 0.1f);
    t.Vector(pre + "ln1.bias", e, 0.0f, 0.1f);
    t.Matrix(pre + "ffn_up.weight", {e, s.n_ff});
    t.Vector(pre + "ffn_up.bias", s.n_ff, 0.0f, 0.1f);
    t.Matrix(pre + "ffn_down.weight", {s.n_ff, e});
    t.Vector(pre + "ffn_down.bias", e, 0.0f, 0.1f);
    t.Vector(pre + "ln2.weight", e, 1.0f, 0.1f);
    t.Vector(pre + "ln2.bias", e, 0.0f, 0.1f);
  }
  t.Vector("v.post_ln.weight", e, 1.0f, 0.1f);
  t.Vector("v.post_ln.bias", e, 0.0f, 0.1f);
  t.Vector("mm.soft_emb_norm.weight", e, 1.0f, 0.1f);
  // ggml's layout of Gemma 3's input projection: dims {text width, vision width}.
  t.Matrix("mm.input_projection.weight", {s.n_text_embd, e});
  return w;
}

Status WriteGemma3Projector(const ProjectorSpec& spec, const std::string& path) {
  return MakeGemma3Projector(spec).WriteFile(path);
}

}  // namespace sparrow::testing
