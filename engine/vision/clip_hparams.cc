// ClipModel::ReadHparams: the clip.* keys of a projector file, as llama.cpp d32676d7's clip.cpp
// reads them (which are required, which have defaults), each range-checked.
#include <string>

#include "engine/model/hparam_reader.h"
#include "engine/vision/clip_model.h"

namespace sparrow::vision {

const char* ProjectorTypeName(ProjectorType type) {
  switch (type) {
    case ProjectorType::kGemma3:
      return "gemma3";
  }
  return "?";
}

namespace {

constexpr int64_t kMaxImageSize = 8192;
constexpr int64_t kMaxWidth = 1 << 16;
constexpr int64_t kMaxLayers = 1024;

Result<ProjectorType> ReadProjectorType(const GgufFile& f) {
  std::string key = "clip.projector_type";
  if (!f.Find(key)) key = "clip.vision.projector_type";  // files with audio beside vision
  if (!f.Find(key)) {
    return NotFound(
        "no clip.projector_type: not a projector file (--mmproj takes the file "
        "convert_hf_to_gguf.py --mmproj writes beside the text model)");
  }
  SPARROW_ASSIGN_OR_RETURN(std::string_view name, f.GetString(key));
  if (name == "gemma3") return ProjectorType::kGemma3;
  return Unsupported("metadata key '" + key + "' is '" + std::string(name) +
                     "': that projector type is not supported yet (Sparrow runs: gemma3)");
}

Result<std::array<float, 3>> ReadRgb(const GgufFile& f, const std::string& key, bool positive) {
  SPARROW_ASSIGN_OR_RETURN(const GgufArray* a, f.GetArray(key));
  SPARROW_ASSIGN_OR_RETURN(std::vector<float> v, GgufFile::ArrayAsFloats(*a, key));
  if (v.size() < 3) {
    return Corrupt("metadata key '" + key + "' has " + std::to_string(v.size()) +
                   " values, expected 3 (R, G, B)");
  }
  std::array<float, 3> out{};
  for (int c = 0; c < 3; ++c) {
    const bool ok = positive ? v[c] > 0.0f && v[c] < 1e6f : v[c] > -1e6f && v[c] < 1e6f;
    if (!ok) {
      return Corrupt("metadata key '" + key + "' value " + std::to_string(c) + " is " +
                     std::to_string(v[c]) + (positive ? ", expected > 0" : ", out of range"));
    }
    out[c] = v[c];
  }
  return out;
}

}  // namespace

Status ClipModel::ReadHparams() {
  const GgufFile& f = *file_;
  SPARROW_ASSIGN_OR_RETURN(hp_.projector, ReadProjectorType(f));
  SPARROW_ASSIGN_OR_RETURN(bool has_vision, f.GetBoolOr("clip.has_vision_encoder", false));
  if (!has_vision) {
    return Unsupported("metadata key 'clip.has_vision_encoder' is not true: no vision encoder");
  }
  SPARROW_ASSIGN_OR_RETURN(hp_.n_embd, ReadCount(f, "clip.vision.embedding_length", kMaxWidth));
  SPARROW_ASSIGN_OR_RETURN(hp_.n_ff,
                           ReadCount(f, "clip.vision.feed_forward_length", 4 * kMaxWidth));
  SPARROW_ASSIGN_OR_RETURN(hp_.n_layer, ReadCount(f, "clip.vision.block_count", kMaxLayers));
  SPARROW_ASSIGN_OR_RETURN(hp_.n_head, ReadCount(f, "clip.vision.attention.head_count", kMaxWidth));
  SPARROW_ASSIGN_OR_RETURN(int64_t n_head_kv, ReadCountOr(f, "clip.vision.attention.head_count_kv",
                                                          hp_.n_head, kMaxWidth));
  if (n_head_kv != hp_.n_head) {
    return Unsupported("metadata key 'clip.vision.attention.head_count_kv' is " +
                       std::to_string(n_head_kv) +
                       ": grouped attention in the vision tower is "
                       "not supported (head_count is " +
                       std::to_string(hp_.n_head) + ")");
  }
  SPARROW_ASSIGN_OR_RETURN(hp_.head_dim, ReadCountOr(f, "clip.vision.attention.head_dim",
                                                     hp_.n_embd / hp_.n_head, kMaxWidth));
  if (hp_.head_dim == 0 || hp_.head_dim * hp_.n_head != hp_.n_embd) {
    return Unsupported("the vision tower's " + std::to_string(hp_.n_head) + " heads of " +
                       std::to_string(hp_.head_dim) + " do not make its width " +
                       std::to_string(hp_.n_embd) + " (clip.vision.attention.head_count)");
  }
  if (!f.Find("clip.vision.attention.layer_norm_epsilon")) {
    return NotFound("metadata key 'clip.vision.attention.layer_norm_epsilon' is missing");
  }
  SPARROW_ASSIGN_OR_RETURN(hp_.eps,
                           ReadFloatOr(f, "clip.vision.attention.layer_norm_epsilon", 0, 0, 1));
  SPARROW_ASSIGN_OR_RETURN(hp_.image_size, ReadCount(f, "clip.vision.image_size", kMaxImageSize));
  SPARROW_ASSIGN_OR_RETURN(hp_.patch_size, ReadCount(f, "clip.vision.patch_size", kMaxImageSize));
  if (hp_.image_size % hp_.patch_size != 0) {
    return Corrupt("metadata key 'clip.vision.image_size' (" + std::to_string(hp_.image_size) +
                   ") is not a multiple of clip.vision.patch_size (" +
                   std::to_string(hp_.patch_size) + ")");
  }
  SPARROW_ASSIGN_OR_RETURN(hp_.image_mean, ReadRgb(f, "clip.vision.image_mean", false));
  SPARROW_ASSIGN_OR_RETURN(hp_.image_std, ReadRgb(f, "clip.vision.image_std", true));
  SPARROW_ASSIGN_OR_RETURN(bool use_gelu, f.GetBoolOr("clip.use_gelu", false));
  SPARROW_ASSIGN_OR_RETURN(bool use_silu, f.GetBoolOr("clip.use_silu", false));
  if (!use_gelu || use_silu) {
    return Unsupported(
        "the vision tower's activation is not GELU (clip.use_gelu is not true, or clip.use_silu "
        "is): only GELU towers are supported");
  }
  // gemma3: 4 for every released size; llama.cpp's test model sets it smaller.
  SPARROW_ASSIGN_OR_RETURN(hp_.n_merge,
                           ReadCountOr(f, "clip.vision.projector.scale_factor", 4, kMaxImageSize));
  if (hp_.patches_per_side() % hp_.n_merge != 0) {
    return Corrupt("metadata key 'clip.vision.projector.scale_factor' (" +
                   std::to_string(hp_.n_merge) + ") does not divide the " +
                   std::to_string(hp_.patches_per_side()) + " patches of a side");
  }
  return Status::Ok();
}

}  // namespace sparrow::vision
