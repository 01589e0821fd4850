#include "engine/model/neuron_bundles.h"

#include <bit>
#include <cstring>

#include "engine/model/gguf_header.h"

namespace sparrow {
namespace {

namespace k = bundle_keys;

uint64_t RowBytesOf(TensorType type, int64_t n) {
  const uint64_t dims[1] = {static_cast<uint64_t>(n)};
  return GgufTensorBytes(type, dims);
}

}  // namespace

Result<std::vector<TensorType>> ReadBundleTypes(const GgufFile& f, std::string_view key,
                                                int64_t n_layer, int64_t n_embd) {
  SPARROW_ASSIGN_OR_RETURN(const GgufArray* a, f.GetArray(key));
  SPARROW_ASSIGN_OR_RETURN(std::vector<int64_t> ids, GgufFile::ArrayAsInts(*a, key));
  if (static_cast<int64_t>(ids.size()) != n_layer) {
    return Corrupt(std::string(key) + " has " + std::to_string(ids.size()) +
                   " entries, expected one per layer (" + std::to_string(n_layer) + ")");
  }
  std::vector<TensorType> types;
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto traits = ids[i] >= 0 && ids[i] < 1024
                            ? GetTensorTypeTraits(static_cast<TensorType>(ids[i]))
                            : std::nullopt;
    if (!traits || !traits->weight_supported) {
      return Unsupported(std::string(key) + "[" + std::to_string(i) + "] is type id " +
                         std::to_string(ids[i]) + ", which Sparrow cannot compute with");
    }
    if (n_embd % traits->block_elems != 0) {
      return Corrupt(std::string(key) + "[" + std::to_string(i) + "] is " +
                     std::string(TensorTypeName(static_cast<TensorType>(ids[i]))) +
                     ", whose blocks do not tile a row of " + std::to_string(n_embd));
    }
    types.push_back(static_cast<TensorType>(ids[i]));
  }
  return types;
}

Status ReadBundleMissCurve(const GgufFile& f, NeuronBundleLayout* layout) {
  const bool has_fraction = f.Find(k::kMissFraction) != nullptr;
  if (has_fraction != (f.Find(k::kMissRate) != nullptr)) {
    return Corrupt(std::string(has_fraction ? k::kMissRate : k::kMissFraction) +
                   " is missing: the miss curve needs both " + std::string(k::kMissFraction) +
                   " and " + std::string(k::kMissRate));
  }
  if (!has_fraction) return Status::Ok();
  SPARROW_ASSIGN_OR_RETURN(const GgufArray* fa, f.GetArray(k::kMissFraction));
  SPARROW_ASSIGN_OR_RETURN(const GgufArray* ra, f.GetArray(k::kMissRate));
  SPARROW_ASSIGN_OR_RETURN(auto fraction, GgufFile::ArrayAsFloats(*fa, k::kMissFraction));
  SPARROW_ASSIGN_OR_RETURN(auto rate, GgufFile::ArrayAsFloats(*ra, k::kMissRate));
  if (fraction.empty() || fraction.size() != rate.size()) {
    return Corrupt(std::string(k::kMissFraction) + " has " + std::to_string(fraction.size()) +
                   " entries and " + std::string(k::kMissRate) + " " + std::to_string(rate.size()) +
                   ": they must pair up, at least one");
  }
  for (size_t i = 0; i < fraction.size(); ++i) {
    const bool ascending = i == 0 || fraction[i] > fraction[i - 1];
    if (!(fraction[i] > 0 && fraction[i] <= 1) || !ascending) {
      return Corrupt(std::string(k::kMissFraction) + "[" + std::to_string(i) + "] is " +
                     std::to_string(fraction[i]) + ": fractions ascend in (0, 1]");
    }
    if (!(rate[i] >= 0 && rate[i] <= 1)) {
      return Corrupt(std::string(k::kMissRate) + "[" + std::to_string(i) + "] is " +
                     std::to_string(rate[i]) + ", outside [0, 1]");
    }
  }
  layout->miss_fraction = std::move(fraction);
  layout->miss_rate = std::move(rate);
  return Status::Ok();
}

std::string BundlesTensorName(int64_t layer) {
  return "blk." + std::to_string(layer) + ".ffn_bundles";
}

std::string NeuronIdsTensorName(int64_t layer) {
  return "blk." + std::to_string(layer) + ".ffn_neuron_ids";
}

uint64_t BundleRecordBytes(uint64_t raw, uint64_t io_block) {
  if (raw == 0) return 0;
  if (io_block == 0) return raw;
  if (raw < io_block) {
    const uint64_t pow2 = std::bit_ceil(raw);
    if (pow2 < io_block) return pow2;
  }
  return (raw + io_block - 1) / io_block * io_block;
}

bool HasNeuronBundles(const GgufFile& f) {
  return f.Find(k::kLayout) != nullptr;
}

Status ReadBundleHeader(const GgufFile& f, std::string_view layout_name,
                        NeuronBundleLayout* layout) {
  SPARROW_ASSIGN_OR_RETURN(std::string_view name, f.GetString(k::kLayout));
  if (name != layout_name) {
    return Unsupported(std::string(k::kLayout) + " is '" + std::string(name) + "', expected '" +
                       std::string(layout_name) + "'");
  }
  SPARROW_ASSIGN_OR_RETURN(uint64_t version, f.GetUInt(k::kVersion));
  if (version != k::kCurrentVersion) {
    return Unsupported(std::string(k::kVersion) + " is " + std::to_string(version) +
                       "; this Sparrow reads version " + std::to_string(k::kCurrentVersion) +
                       " (convert the model again)");
  }
  SPARROW_ASSIGN_OR_RETURN(uint64_t io_block, f.GetUInt(k::kIoBlock));
  if (io_block == 0 || io_block > (1u << 24) || !std::has_single_bit(io_block)) {
    return Corrupt(std::string(k::kIoBlock) + " is " + std::to_string(io_block) +
                   ", expected a power of two up to 16 MiB");
  }
  layout->io_block = static_cast<uint32_t>(io_block);
  return ReadBundleMissCurve(f, layout);
}

Result<NeuronBundleLayout> ReadNeuronBundleLayout(const GgufFile& f, int64_t n_layer, int64_t n_ff,
                                                  int64_t n_embd) {
  NeuronBundleLayout layout;
  SPARROW_RETURN_IF_ERROR(ReadBundleHeader(f, k::kLayoutName, &layout));
  SPARROW_ASSIGN_OR_RETURN(layout.gate_in_bundle, f.GetBool(k::kGateInBundle));
  SPARROW_ASSIGN_OR_RETURN(layout.powerinfer, f.GetBoolOr(k::kPowerInfer, false));
  SPARROW_ASSIGN_OR_RETURN(auto gate_types, ReadBundleTypes(f, k::kGateTypes, n_layer, n_embd));
  SPARROW_ASSIGN_OR_RETURN(auto up_types, ReadBundleTypes(f, k::kUpTypes, n_layer, n_embd));
  SPARROW_ASSIGN_OR_RETURN(auto down_types, ReadBundleTypes(f, k::kDownTypes, n_layer, n_embd));
  if (f.Find(k::kActiveShare)) {
    SPARROW_ASSIGN_OR_RETURN(double share, f.GetFloat(k::kActiveShare));
    if (!(share > 0 && share <= 1)) {
      return Corrupt(std::string(k::kActiveShare) + " is " + std::to_string(share) +
                     ", outside (0, 1]");
    }
    layout.active_share = static_cast<float>(share);
  }

  layout.layers.resize(n_layer);
  std::vector<uint8_t> seen;
  for (int64_t il = 0; il < n_layer; ++il) {
    LayerBundles& l = layout.layers[il];
    l.gate_type = gate_types[il];
    l.up_type = up_types[il];
    l.down_type = down_types[il];
    const uint64_t gate = layout.gate_in_bundle ? RowBytesOf(l.gate_type, n_embd) : 0;
    l.gate_offset = 0;
    l.up_offset = gate;
    l.down_offset = gate + RowBytesOf(l.up_type, n_embd);
    const uint64_t raw = l.down_offset + RowBytesOf(l.down_type, n_embd);

    const std::string bname = BundlesTensorName(il);
    const GgufTensorInfo* b = f.FindTensor(bname);
    if (!b) return NotFound("tensor '" + bname + "' is missing (the layer's neuron bundles)");
    if (b->type != TensorType::kI8 || b->dims.size() != 2 ||
        b->dims[1] != static_cast<uint64_t>(n_ff) || b->dims[0] < raw) {
      return Corrupt("tensor '" + bname + "' must be i8 of {record bytes >= " +
                     std::to_string(raw) + ", n_ff = " + std::to_string(n_ff) + "}");
    }
    l.record_bytes = b->dims[0];
    l.records = b->data;
    l.file_offset = static_cast<uint64_t>(b->data - f.base());

    const std::string iname = NeuronIdsTensorName(il);
    const GgufTensorInfo* ids = f.FindTensor(iname);
    if (!ids) return NotFound("tensor '" + iname + "' is missing (the layer's neuron order)");
    if (ids->type != TensorType::kI32 || ids->dims.size() != 1 ||
        ids->dims[0] != static_cast<uint64_t>(n_ff)) {
      return Corrupt("tensor '" + iname + "' must be i32 of {n_ff = " + std::to_string(n_ff) + "}");
    }
    l.neuron_ids.resize(n_ff);
    std::memcpy(l.neuron_ids.data(), ids->data, n_ff * sizeof(int32_t));
    seen.assign(n_ff, 0);
    for (int64_t i = 0; i < n_ff; ++i) {
      const int32_t id = l.neuron_ids[i];
      if (id < 0 || id >= n_ff || seen[id]) {
        return Corrupt("tensor '" + iname + "' is not a permutation of 0.." +
                       std::to_string(n_ff - 1) + " (entry " + std::to_string(i) + " is " +
                       std::to_string(id) + ")");
      }
      seen[id] = 1;
    }
  }
  return layout;
}

}  // namespace sparrow
