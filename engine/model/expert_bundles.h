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
// Experts whose own FFN is sparse (ReGLU: SmallThinker) hold neuron bundles inside instead: the
// gate matrix, then per neuron its up row and its down row (the column of the down matrix, as a
// row), so a computed expert reads the up and down rows of only the neurons its gate opened and
// the two levels of sparsity compose. Key sparrow.expert.neuron_bundles says so; down_types are
// then the types of those rows (n_embd long).
//
//   sparrow.layout               string   "expert-bundles"
//   sparrow.layout.version       u32      1
//   sparrow.bundle.io_block      u32      the I/O block records are laid out for (4096)
//   sparrow.bundle.gate_types    u32[L]   tensor type of each layer's gate matrices
//   sparrow.bundle.up_types      u32[L]   ... up matrices
//   sparrow.bundle.down_types    u32[L]   ... down matrices (or down rows, see below)
//   sparrow.expert.neuron_bundles bool    optional (false): records hold neuron bundles
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
inline constexpr std::string_view kNeuronBundles = "sparrow.expert.neuron_bundles";
}  // namespace expert_keys

std::string ExpertBundlesTensorName(int64_t layer);  // blk.N.ffn_expert_bundles
std::string ExpertIdsTensorName(int64_t layer);      // blk.N.ffn_expert_ids

// True when `f` declares the expert layout.
bool HasExpertBundles(const GgufFile& f);

// Bytes of one expert's three matrices of the given types, before padding; with
// `neuron_bundles`, down is n_ff_exp rows of n_embd.
uint64_t ExpertRawBytes(TensorType gate, TensorType up, TensorType down, int64_t n_embd,
                        int64_t n_ff_exp, bool neuron_bundles = false);

// The type of the down rows of neuron bundles made from a down matrix of `type`: F32 and F16 are
// kept, every other becomes Q8_0 (F16 where n_embd is not a multiple of 32). A second rounding
// to 4 bits moved the synthetic smallthinker Q4_0 file's logits by up to 0.41 of their range
// against llama.cpp, one to 8 bits by 0.017 (tests/golden).
TensorType ExpertDownRowsType(TensorType type, int64_t n_embd);

// The layout of a converted file of `n_layer` layers of `n_expert` experts of `n_ff_exp` neurons
// on `n_embd`. Checks the version, the types (gate and up rows tile n_embd, down rows n_ff_exp),
// that records hold their matrices and that expert ids are a permutation; errors name the key or
// tensor. neuron_ids holds each record's expert; record_of its inverse.
Result<NeuronBundleLayout> ReadExpertBundleLayout(const GgufFile& f, int64_t n_layer,
                                                  int64_t n_expert, int64_t n_embd,
                                                  int64_t n_ff_exp);

}  // namespace sparrow
