#pragma once
// The type each tensor of a model gets in `sparrow quantize`, following llama-quantize (d32676d7):
// which tensors it leaves alone, and for the others PickTensorType's choice plus its rules for
// 8-expert models. Pure functions; thread-safe.
#include <cstdint>
#include <span>
#include <string_view>

#include "engine/common/result.h"
#include "engine/common/tensor_type.h"
#include "engine/tools/mkmodel_shapes.h"

namespace sparrow::tools {

// What the choice needs to know about the whole model.
struct QuantizeModelFacts {
  int64_t n_layer = 0;       // <arch>.block_count
  int64_t n_expert = 0;      // <arch>.expert_count (0: dense)
  bool tied_output = false;  // no output.weight: token_embd is the output matrix too
};

// True when llama-quantize converts the tensor: a weight ("...weight") of 2 or 3 dims that is
// not a norm, the MoE router (ffn_gate_inp) or a rope factor table.
bool IsQuantizable(std::string_view name, std::span<const uint64_t> dims);

// The role a quantizable tensor plays in the type choice, from its name (3-D expert tensors
// ffn_*_exps take their 2-D twin's role). Tensors without a special rule count as kAttnQ, which
// gets the file type's base type. `layer` receives N of "blk.N." (0 when absent).
TensorRole RoleOf(std::string_view name, int64_t* layer);

// The stored type of a quantizable tensor with rows of `cols` elements. InvalidArgument naming
// the tensor when no type llama-quantize would fall back to fits the row length.
Result<TensorType> QuantizedType(ModelFileType ftype, std::string_view name, int64_t cols,
                                 const QuantizeModelFacts& facts);

}  // namespace sparrow::tools
