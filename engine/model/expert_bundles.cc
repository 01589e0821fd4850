#include "engine/model/expert_bundles.h"

#include <cstring>

#include "engine/kernels/sparse_ops.h"
#include "engine/model/gguf_header.h"

namespace sparrow {
namespace {

namespace k = bundle_keys;

uint64_t RowsBytes(TensorType type, int64_t cols, int64_t rows) {
  const uint64_t dims[2] = {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows)};
  return GgufTensorBytes(type, dims);
}

}  // namespace

std::string ExpertBundlesTensorName(int64_t layer) {
  return "blk." + std::to_string(layer) + ".ffn_expert_bundles";
}

std::string ExpertIdsTensorName(int64_t layer) {
  return "blk." + std::to_string(layer) + ".ffn_expert_ids";
}

bool HasExpertBundles(const GgufFile& f) {
  auto name = f.GetString(k::kLayout);
  return name.ok() && name.value() == expert_keys::kLayoutName;
}

uint64_t ExpertRawBytes(TensorType gate, TensorType up, TensorType down, int64_t n_embd,
                        int64_t n_ff_exp, bool neuron_bundles) {
  return RowsBytes(gate, n_embd, n_ff_exp) + RowsBytes(up, n_embd, n_ff_exp) +
         (neuron_bundles ? RowsBytes(down, n_embd, n_ff_exp) : RowsBytes(down, n_ff_exp, n_embd));
}

TensorType ExpertDownRowsType(TensorType type, int64_t n_embd) {
  if (type == TensorType::kF32 || type == TensorType::kF16) return type;
  return n_embd % 32 == 0 ? TensorType::kQ8_0 : TensorType::kF16;
}

Result<NeuronBundleLayout> ReadExpertBundleLayout(const GgufFile& f, int64_t n_layer,
                                                  int64_t n_expert, int64_t n_embd,
                                                  int64_t n_ff_exp) {
  NeuronBundleLayout layout;
  layout.experts = true;
  layout.gate_in_bundle = true;
  SPARROW_RETURN_IF_ERROR(ReadBundleHeader(f, expert_keys::kLayoutName, &layout));
  SPARROW_ASSIGN_OR_RETURN(auto gate_types, ReadBundleTypes(f, k::kGateTypes, n_layer, n_embd));
  SPARROW_ASSIGN_OR_RETURN(auto up_types, ReadBundleTypes(f, k::kUpTypes, n_layer, n_embd));
  SPARROW_ASSIGN_OR_RETURN(const bool neurons, f.GetBoolOr(expert_keys::kNeuronBundles, false));
  SPARROW_ASSIGN_OR_RETURN(auto down_types,
                           ReadBundleTypes(f, k::kDownTypes, n_layer, neurons ? n_embd : n_ff_exp));
  layout.layers.resize(n_layer);
  for (int64_t il = 0; il < n_layer; ++il) {
    LayerBundles& l = layout.layers[il];
    l.gate_type = gate_types[il];
    l.up_type = up_types[il];
    l.down_type = down_types[il];
    l.gate_offset = 0;
    l.up_offset = RowsBytes(l.gate_type, n_embd, n_ff_exp);
    if (neurons) {
      if (!kernels::AccumulatesRows(l.down_type)) {
        return Unsupported(std::string(k::kDownTypes) + "[" + std::to_string(il) + "] is " +
                           std::string(TensorTypeName(l.down_type)) +
                           "; neuron bundles' down rows must be f32, f16, q4_0 or q8_0");
      }
      const uint64_t up_row = RowsBytes(l.up_type, n_embd, 1);
      l.down_offset = l.up_offset + up_row;
      l.neuron_stride = up_row + RowsBytes(l.down_type, n_embd, 1);
    } else {
      l.down_offset = l.up_offset + RowsBytes(l.up_type, n_embd, n_ff_exp);
    }
    const uint64_t raw =
        ExpertRawBytes(l.gate_type, l.up_type, l.down_type, n_embd, n_ff_exp, neurons);

    const std::string bname = ExpertBundlesTensorName(il);
    const GgufTensorInfo* b = f.FindTensor(bname);
    if (!b) return NotFound("tensor '" + bname + "' is missing (the layer's expert bundles)");
    if (b->type != TensorType::kI8 || b->dims.size() != 2 ||
        b->dims[1] != static_cast<uint64_t>(n_expert) || b->dims[0] < raw) {
      return Corrupt("tensor '" + bname + "' must be i8 of {record bytes >= " +
                     std::to_string(raw) + ", n_expert = " + std::to_string(n_expert) + "}");
    }
    l.record_bytes = b->dims[0];
    l.records = b->data;
    l.file_offset = static_cast<uint64_t>(b->data - f.base());

    const std::string iname = ExpertIdsTensorName(il);
    const GgufTensorInfo* ids = f.FindTensor(iname);
    if (!ids) return NotFound("tensor '" + iname + "' is missing (the layer's expert order)");
    if (ids->type != TensorType::kI32 || ids->dims.size() != 1 ||
        ids->dims[0] != static_cast<uint64_t>(n_expert)) {
      return Corrupt("tensor '" + iname +
                     "' must be i32 of {n_expert = " + std::to_string(n_expert) + "}");
    }
    l.neuron_ids.resize(n_expert);
    std::memcpy(l.neuron_ids.data(), ids->data, n_expert * sizeof(int32_t));
    l.record_of.assign(n_expert, -1);
    for (int64_t i = 0; i < n_expert; ++i) {
      const int32_t id = l.neuron_ids[i];
      if (id < 0 || id >= n_expert || l.record_of[id] >= 0) {
        return Corrupt("tensor '" + iname + "' is not a permutation of 0.." +
                       std::to_string(n_expert - 1) + " (entry " + std::to_string(i) + " is " +
                       std::to_string(id) + ")");
      }
      l.record_of[id] = static_cast<int32_t>(i);
    }
  }
  return layout;
}

}  // namespace sparrow
