// ClipModel: the v.* and mm.* tensors of a projector file, bound by role with their shapes and
// types checked (names as llama.cpp d32676d7's clip-impl.h spells them).
#include "engine/vision/clip_model.h"

#include <cstring>
#include <string>
#include <utility>

#include "engine/kernels/dequantize.h"
#include "engine/kernels/fp16.h"
#include "engine/kernels/vec_dot.h"

namespace sparrow::vision {

namespace {

std::string Shape(const std::vector<uint64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Finds tensors and checks them against the hyper-parameters.
class TensorBinder {
 public:
  explicit TensorBinder(const GgufFile& f) : f_(f) {}

  // The tensor `name` with exactly `dims` (ggml order), or null when it is absent and not
  // `required`.
  Result<const GgufTensorInfo*> Find(const std::string& name, std::vector<uint64_t> dims,
                                     bool required) const {
    const GgufTensorInfo* t = f_.FindTensor(name);
    if (!t) {
      if (!required) return static_cast<const GgufTensorInfo*>(nullptr);
      return NotFound("tensor '" + name + "' is missing");
    }
    if (t->dims != dims) {
      return Corrupt("tensor '" + name + "' has shape " + Shape(t->dims) + ", expected " +
                     Shape(dims));
    }
    return t;
  }

  // A vector of f32 (F32, F16 or BF16 in the file); empty when absent and not required.
  Result<std::vector<float>> Floats(const std::string& name, std::vector<uint64_t> dims,
                                    bool required = true) const {
    SPARROW_ASSIGN_OR_RETURN(const GgufTensorInfo* t, Find(name, std::move(dims), required));
    if (!t) return std::vector<float>{};
    SPARROW_RETURN_IF_ERROR(CheckPlainType(*t));
    std::vector<float> out(t->n_elements);
    kernels::DequantizeRow(t->type, t->data, out.data(), static_cast<int64_t>(t->n_elements));
    return out;
  }

  // A matrix of `rows` rows of `cols`, of a type the matrix products compute with.
  Result<kernels::WeightMatrix> Matrix(const std::string& name, int64_t cols, int64_t rows) const {
    SPARROW_ASSIGN_OR_RETURN(
        const GgufTensorInfo* t,
        Find(name, {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows)}, true));
    return AsMatrix(*t);
  }

  static Result<kernels::WeightMatrix> AsMatrix(const GgufTensorInfo& t) {
    const auto traits = GetTensorTypeTraits(t.type);
    if (!traits || !kernels::HasVecDot(t.type) || t.dims[0] % traits->block_elems != 0) {
      return Unsupported("tensor '" + t.name + "' is of type " +
                         std::string(TensorTypeName(t.type)) +
                         ", which the matrix products do not take");
    }
    kernels::WeightMatrix w;
    w.type = t.type;
    w.data = t.data;
    w.cols = static_cast<int64_t>(t.dims[0]);
    w.rows = static_cast<int64_t>(t.rows());
    w.row_stride_bytes = t.row_bytes();
    return w;
  }

  static Status CheckPlainType(const GgufTensorInfo& t) {
    if (t.type == TensorType::kF32 || t.type == TensorType::kF16 || t.type == TensorType::kBF16) {
      return Status::Ok();
    }
    return Unsupported("tensor '" + t.name + "' is of type " + std::string(TensorTypeName(t.type)) +
                       ", expected F32, F16 or BF16");
  }

 private:
  const GgufFile& f_;
};

// `rows` x `cols` elements of `elem` bytes at `src` (row r at src + r * cols * elem), written
// transposed: cols x rows.
std::vector<uint8_t> Transposed(const uint8_t* src, int64_t rows, int64_t cols, size_t elem) {
  std::vector<uint8_t> out(static_cast<size_t>(rows * cols) * elem);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      std::memcpy(&out[static_cast<size_t>(c * rows + r) * elem],
                  &src[static_cast<size_t>(r * cols + c) * elem], elem);
    }
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<ClipModel>> ClipModel::Load(const std::string& path) {
  auto file = GgufFile::Open(path);
  if (!file.ok()) return file.status().WithContext("projector " + path);
  return FromGguf(std::move(*file));
}

Result<std::unique_ptr<ClipModel>> ClipModel::FromGguf(std::unique_ptr<GgufFile> file) {
  std::unique_ptr<ClipModel> m(new ClipModel());
  m->file_ = std::move(file);
  const std::string context = "projector " + m->file_->path();
  Status st = m->ReadHparams();
  if (st.ok()) st = m->BindTensors();
  if (!st.ok()) return st.WithContext(context);
  return m;
}

Status ClipModel::BindTensors() {
  const TensorBinder b(*file_);
  const auto e = static_cast<uint64_t>(hp_.n_embd);
  const auto ff = static_cast<uint64_t>(hp_.n_ff);
  const auto p = static_cast<uint64_t>(hp_.patch_size);
  // Parts of other towers that a gemma3 file does not have; running without them would give
  // other numbers than llama.cpp's, so they are refused rather than ignored.
  for (const char* name : {"v.pre_ln.weight", "v.class_embd", "v.blk.0.attn_qkv.weight",
                           "v.blk.0.ffn_gate.weight", "v.blk.0.ls1.weight"}) {
    if (file_->FindTensor(name)) {
      return Unsupported("tensor '" + std::string(name) + "' is not part of a " +
                         ProjectorTypeName(hp_.projector) + " vision tower");
    }
  }

  SPARROW_ASSIGN_OR_RETURN(const GgufTensorInfo* patch,
                           b.Find("v.patch_embd.weight", {p, p, 3, e}, true));
  if (patch->type != TensorType::kF32 && patch->type != TensorType::kF16) {
    return Unsupported("tensor 'v.patch_embd.weight' is of type " +
                       std::string(TensorTypeName(patch->type)) + ", expected F32 or F16");
  }
  // The convolution's kernel as a matrix: one row of 3 * p * p per output channel. ggml's
  // conv_2d multiplies in F16 whatever the kernel's type (its im2col is F16, and the kernel is
  // rounded to it), so an F32 kernel is kept as its F16 copy.
  const int64_t k = static_cast<int64_t>(3 * p * p);
  if (patch->type == TensorType::kF32) {
    patch_embd_f16_.resize(static_cast<size_t>(k * hp_.n_embd));
    const auto* src = reinterpret_cast<const float*>(patch->data);
    for (size_t i = 0; i < patch_embd_f16_.size(); ++i) {
      patch_embd_f16_[i] = kernels::Fp32ToFp16(src[i]);
    }
  }
  patch_embd_.type = TensorType::kF16;
  patch_embd_.data = patch_embd_f16_.empty() ? static_cast<const void*>(patch->data)
                                             : static_cast<const void*>(patch_embd_f16_.data());
  patch_embd_.cols = k;
  patch_embd_.rows = hp_.n_embd;
  patch_embd_.row_stride_bytes = static_cast<size_t>(k) * 2;
  SPARROW_ASSIGN_OR_RETURN(patch_bias_, b.Floats("v.patch_embd.bias", {e}, false));
  SPARROW_ASSIGN_OR_RETURN(
      positions_, b.Floats("v.position_embd.weight", {e, static_cast<uint64_t>(hp_.n_patches())}));

  layers_.resize(static_cast<size_t>(hp_.n_layer));
  for (int64_t il = 0; il < hp_.n_layer; ++il) {
    ClipLayer& l = layers_[static_cast<size_t>(il)];
    const std::string pre = "v.blk." + std::to_string(il) + ".";
    SPARROW_ASSIGN_OR_RETURN(l.ln1_w, b.Floats(pre + "ln1.weight", {e}));
    SPARROW_ASSIGN_OR_RETURN(l.ln1_b, b.Floats(pre + "ln1.bias", {e}, false));
    SPARROW_ASSIGN_OR_RETURN(l.ln2_w, b.Floats(pre + "ln2.weight", {e}));
    SPARROW_ASSIGN_OR_RETURN(l.ln2_b, b.Floats(pre + "ln2.bias", {e}, false));
    SPARROW_ASSIGN_OR_RETURN(l.q, b.Matrix(pre + "attn_q.weight", hp_.n_embd, hp_.n_embd));
    SPARROW_ASSIGN_OR_RETURN(l.k, b.Matrix(pre + "attn_k.weight", hp_.n_embd, hp_.n_embd));
    SPARROW_ASSIGN_OR_RETURN(l.v, b.Matrix(pre + "attn_v.weight", hp_.n_embd, hp_.n_embd));
    SPARROW_ASSIGN_OR_RETURN(l.o, b.Matrix(pre + "attn_out.weight", hp_.n_embd, hp_.n_embd));
    SPARROW_ASSIGN_OR_RETURN(l.q_b, b.Floats(pre + "attn_q.bias", {e}, false));
    SPARROW_ASSIGN_OR_RETURN(l.k_b, b.Floats(pre + "attn_k.bias", {e}, false));
    SPARROW_ASSIGN_OR_RETURN(l.v_b, b.Floats(pre + "attn_v.bias", {e}, false));
    SPARROW_ASSIGN_OR_RETURN(l.o_b, b.Floats(pre + "attn_out.bias", {e}, false));
    // Old conversions wrote fc1 as ffn_down and fc2 as ffn_up; llama.cpp swaps them back when
    // ffn_down's rows are n_embd long, and so do we.
    std::string up = pre + "ffn_up.", down = pre + "ffn_down.";
    const GgufTensorInfo* d = file_->FindTensor(down + "weight");
    if (d && !d->dims.empty() && d->dims[0] == e && hp_.n_ff != hp_.n_embd) std::swap(up, down);
    SPARROW_ASSIGN_OR_RETURN(l.up, b.Matrix(up + "weight", hp_.n_embd, hp_.n_ff));
    SPARROW_ASSIGN_OR_RETURN(l.down, b.Matrix(down + "weight", hp_.n_ff, hp_.n_embd));
    SPARROW_ASSIGN_OR_RETURN(l.up_b, b.Floats(up + "bias", {ff}, false));
    SPARROW_ASSIGN_OR_RETURN(l.down_b, b.Floats(down + "bias", {e}, false));
  }
  SPARROW_ASSIGN_OR_RETURN(post_ln_w_, b.Floats("v.post_ln.weight", {e}));
  SPARROW_ASSIGN_OR_RETURN(post_ln_b_, b.Floats("v.post_ln.bias", {e}, false));

  SPARROW_ASSIGN_OR_RETURN(soft_emb_norm_, b.Floats("mm.soft_emb_norm.weight", {e}));
  const GgufTensorInfo* proj = file_->FindTensor("mm.input_projection.weight");
  if (!proj) return NotFound("tensor 'mm.input_projection.weight' is missing");
  if (proj->dims.size() != 2 || proj->dims[1] != e || proj->dims[0] == 0 ||
      proj->dims[0] > (1u << 20)) {
    return Corrupt("tensor 'mm.input_projection.weight' has shape " + Shape(proj->dims) +
                   ", expected [text width, " + std::to_string(e) + "]");
  }
  SPARROW_RETURN_IF_ERROR(TensorBinder::CheckPlainType(*proj));
  hp_.n_text_embd = static_cast<int64_t>(proj->dims[0]);
  // ggml multiplies by its transpose; stored transposed, it is an ordinary weight matrix whose
  // products round the activations as ggml's do (to the file's type).
  const size_t elem = proj->type == TensorType::kF32 ? 4 : 2;
  input_proj_bytes_ = Transposed(proj->data, hp_.n_embd, hp_.n_text_embd, elem);
  input_proj_.type = proj->type;
  input_proj_.data = input_proj_bytes_.data();
  input_proj_.cols = hp_.n_embd;
  input_proj_.rows = hp_.n_text_embd;
  input_proj_.row_stride_bytes = static_cast<size_t>(hp_.n_embd) * elem;
  return Status::Ok();
}

}  // namespace sparrow::vision
