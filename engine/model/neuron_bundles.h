#pragma once
// The sparse layout `sparrow convert` writes (DESIGN.md, "Models on disk"): an ordinary GGUF
// (alignment 4096) whose FFN is stored per layer as one record per neuron, the neuron bundle:
// its gate row (unless the gate stays resident), its up row and its down row (the column of
// ffn_down, stored as a row), neuron-major and hot neurons first. A neuron is then one read from
// flash, and records are padded so that none straddles an I/O block. This file is the layout's
// one definition: key and tensor names, record arithmetic, and the reader's checks.
//
//   sparrow.layout               string   "neuron-bundles"
//   sparrow.layout.version       u32      1
//   sparrow.bundle.io_block      u32      the I/O block records are laid out for (4096)
//   sparrow.bundle.gate          bool     gate rows are in the bundles (else blk.N.ffn_gate)
//   sparrow.bundle.gate_types    u32[L]   tensor type of each layer's gate rows
//   sparrow.bundle.up_types      u32[L]   ... up rows
//   sparrow.bundle.down_types    u32[L]   ... down rows
//   sparrow.powerinfer           bool     PowerInfer semantics (converted from a PWRI file)
//   sparrow.bundle.miss_fraction f32[]    optional, with miss_rate: cache sizes (share of all
//                                         bundles, ascending in (0, 1]) ...
//   sparrow.bundle.miss_rate     f32[]    ... and the share of a token's neurons each misses,
//                                         replayed under the store's default policy on the
//                                         calibration text (`--calibrate`): the planner's curve
//   sparrow.bundle.active_share  f32      optional: the share of neurons the predictor chose per
//                                         token on that text (the planner's active share)
//   blk.N.ffn_bundles            i8       {record bytes, n_ff}: the records
//   blk.N.ffn_neuron_ids         i32      {n_ff}: the source file's id of each record's neuron
//
// Everything indexed by neuron in the converted file (records, a PowerInfer predictor's fc2
// rows) is in record order, so the model computes as if its neurons had always been numbered so.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/result.h"
#include "engine/common/tensor_type.h"
#include "engine/model/gguf_file.h"

namespace sparrow {

namespace bundle_keys {
inline constexpr std::string_view kLayout = "sparrow.layout";
inline constexpr std::string_view kLayoutName = "neuron-bundles";
inline constexpr std::string_view kVersion = "sparrow.layout.version";
inline constexpr uint32_t kCurrentVersion = 1;
inline constexpr std::string_view kIoBlock = "sparrow.bundle.io_block";
inline constexpr std::string_view kGateInBundle = "sparrow.bundle.gate";
inline constexpr std::string_view kGateTypes = "sparrow.bundle.gate_types";
inline constexpr std::string_view kUpTypes = "sparrow.bundle.up_types";
inline constexpr std::string_view kDownTypes = "sparrow.bundle.down_types";
inline constexpr std::string_view kPowerInfer = "sparrow.powerinfer";
inline constexpr std::string_view kMissFraction = "sparrow.bundle.miss_fraction";
inline constexpr std::string_view kMissRate = "sparrow.bundle.miss_rate";
inline constexpr std::string_view kActiveShare = "sparrow.bundle.active_share";
}  // namespace bundle_keys

std::string BundlesTensorName(int64_t layer);    // blk.N.ffn_bundles
std::string NeuronIdsTensorName(int64_t layer);  // blk.N.ffn_neuron_ids

// Bytes of a record holding `raw` bytes of rows, for I/O blocks of `io_block` bytes: the next
// power of two at least `raw` (so records tile a block) while that is under the block, else a
// whole number of blocks. Both cases keep every record inside as few blocks as it can occupy.
uint64_t BundleRecordBytes(uint64_t raw, uint64_t io_block);

struct LayerBundles {
  const uint8_t* records = nullptr;  // record 0, in the mapping
  uint64_t file_offset = 0;          // of record 0 in the file (flash reads)
  uint64_t record_bytes = 0;
  TensorType gate_type = TensorType::kF32, up_type = TensorType::kF32, down_type = TensorType::kF32;
  uint64_t gate_offset = 0, up_offset = 0, down_offset = 0;  // within a record
  std::vector<int32_t> neuron_ids;  // record k holds the source file's neuron neuron_ids[k]
  // Expert layout (expert_bundles.h) only: the record holding each source expert (neuron_ids'
  // inverse; the router keeps the source numbering).
  std::vector<int32_t> record_of;
  // Expert records with neuron bundles inside (expert_bundles.h): the bytes from one neuron's
  // up row to the next's (its down row, a row of the transposed down matrix, sits between);
  // 0 when the records hold the matrices as stored.
  uint64_t neuron_stride = 0;
};

struct NeuronBundleLayout {
  uint32_t io_block = 4096;
  bool gate_in_bundle = true;
  bool powerinfer = false;
  std::vector<LayerBundles> layers;
  // The measured miss curve (keys kMissFraction, kMissRate); empty when the file has none.
  std::vector<float> miss_fraction, miss_rate;
  float active_share = 0;  // key kActiveShare; 0 when the file has none
  // A record is one expert (expert_bundles.h), not one neuron.
  bool experts = false;

  // All layers' records: what a cache holding every bundle needs.
  uint64_t bundle_bytes() const {
    uint64_t n = 0;
    for (const LayerBundles& lb : layers) n += lb.record_bytes * lb.neuron_ids.size();
    return n;
  }
  // The largest layer's record (a cache slot fits any layer's); at least 1.
  uint64_t largest_record_bytes() const {
    uint64_t r = 1;
    for (const LayerBundles& lb : layers) r = lb.record_bytes > r ? lb.record_bytes : r;
    return r;
  }
};

// Shared with the expert layout: the name, version and I/O block keys and the optional miss curve
// (both keys or neither, fractions ascending in (0, 1], rates in [0, 1]) into `layout`.
Status ReadBundleHeader(const GgufFile& f, std::string_view layout_name,
                        NeuronBundleLayout* layout);
// A per-layer array of tensor type ids under `key`, each a type Sparrow computes with whose
// blocks tile a row of `row_elems`.
Result<std::vector<TensorType>> ReadBundleTypes(const GgufFile& f, std::string_view key,
                                                int64_t n_layer, int64_t row_elems);

// True when `f` declares a bundle layout, of neurons or of experts (key sparrow.layout).
bool HasNeuronBundles(const GgufFile& f);

// The layout of a converted file with `n_layer` layers of `n_ff` neurons on `n_embd`. Checks
// the version, the row types (each must be a type Sparrow computes with and tile n_embd), that
// each layer's records hold their rows, and that neuron ids are a permutation; errors name the
// key or tensor.
Result<NeuronBundleLayout> ReadNeuronBundleLayout(const GgufFile& f, int64_t n_layer, int64_t n_ff,
                                                  int64_t n_embd);

}  // namespace sparrow
