#pragma once
// The expert layout `sparrow convert` writes for a mixture-of-experts model: an ordinary GGUF
// (alignment 4096) whose experts are stored per layer as one record per expert, the expert
// bundle: its gate matrix (n_ff_exp rows of n_embd), its up matrix (the same) and its down matrix
// (n_embd rows of n_ff_exp), exactly as the stacked tensors hold them, padded to the I/O block.
// An expert is then one read from flash into one cache slot, and records are in hot-first order
// (the experts the calibration text routed to most). Attention, norms and routers stay resident.
// The records fill a NeuronBundleLayout (experts = true), so the store, its cache and its reader
// serve experts as they serve neurons.
//
//   sparrow.layout               string   "expert-bundles"
//   sparrow.layout.version       u32      1
//   sparrow.bundle.io_block      u32      the I/O block records are laid out for (4096)
//   sparrow.bundle.gate_types    u32[L]   tensor type of each layer's gate matrices
//   sparrow.bundle.up_types      u32[L]   ... up matrices
//   sparrow.bundle.down_types    u32[L]   ... down matrices
//   sparrow.bundle.miss_fraction f32[]    optional: the expert cache's miss curve on the
//   sparrow.bundle.miss_rate     f32[]    calibration text (as neuron_bundles.h)
//   blk.N.ffn_expert_bundles     i8       {record bytes, n_expert}: the records
//   blk.N.ffn_expert_ids         i32      {n_expert}: the source file's id of each record's expert
//
// The router keeps the source file's expert numbering; record_of maps it to records.
#include <cstdint>
#include <string>

#include "engine/common/result.h"
#include "engine/model/gguf_file.h"
#include "engine/model/neuron_bundles.h"

namespace sparrow {

namespace expert_keys {
inline constexpr std::string_view kLayoutName = "expert-bundles";
}  // namespace expert_keys

std::string ExpertBundlesTensorName(int64_t layer);  // blk.N.ffn_expert_bundles
std::string ExpertIdsTensorName(int64_t layer);      // blk.N.ffn_expert_ids

// True when `f` declares the expert layout.
bool HasExpertBundles(const GgufFile& f);

// Bytes of one expert's three matrices of the given types, before padding.
uint64_t ExpertRawBytes(TensorType gate, TensorType up, TensorType down, int64_t n_embd,
                        int64_t n_ff_exp);

// The layout of a converted file of `n_layer` layers of `n_expert` experts of `n_ff_exp` neurons
// on `n_embd`. Checks the version, the types (gate and up rows tile n_embd, down rows n_ff_exp),
// that records hold their matrices and that expert ids are a permutation; errors name the key or
// tensor. neuron_ids holds each record's expert; record_of its inverse.
Result<NeuronBundleLayout> ReadExpertBundleLayout(const GgufFile& f, int64_t n_layer,
                                                  int64_t n_expert, int64_t n_embd,
                                                  int64_t n_ff_exp);

}  // namespace sparrow
