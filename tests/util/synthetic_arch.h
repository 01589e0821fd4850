#pragma once
// Small synthetic random-weight F32 models of the families ../shared/arch lacks (phi3, gemma2,
// mixtral, olmoe, smollm3, smallthinker), in the layout llama.cpp d32676d7 loads: its tensor
// names, shapes and metadata keys. Dimensions as in ../shared/arch/README.md (embedding 256,
// FFN 512, 4 heads, 2 KV heads of 64, context 512, RMS epsilon 1e-6, rope base 10000) and the
// tokenizer of stories260K.gguf (the encoders: synthetic_arch.cc says their shape).
// tests/golden/arch/README.md says what each family exercises;
// the two Qwen3 rerankers (Qwen3-Reranker's layout: pooling type rank, a yes/no cls.output, no
// output matrix) and the BERT cross-encoder (bge-reranker's classification head) are
// tests/golden/rerank/README.md's.
// Pure functions of the spec (the same seed gives the same bytes); thread-safe.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/common/result.h"
#include "tests/util/gguf_writer.h"

namespace sparrow::testing {

enum class ArchFamily {
  kPhi3,
  kGemma2,
  kMixtral,
  kOlmoe,
  kSmollm3,
  kSmallthinker,
  kLlamaYarn,
  kBert,              // an encoder: bge's layout and vocabulary (ggml-vocab-bert-bge.gguf), tiny
  kNomicBert,         // the same with nomic-bert's rotary, fused QKV and SwiGLU
  kQwen3Rerank,       // with a tokenizer.chat_template.rerank (and no BOS, as Qwen3's)
  kQwen3RerankPlain,  // without: [BOS] query [EOS] document [EOS]
  kBertRerank,        // bge-reranker's head on the bert encoder: pooling rank, cls and cls.output
};

std::string_view ArchFamilyName(ArchFamily f);  // "phi3", ..., as in the file names
std::optional<ArchFamily> ParseArchFamily(std::string_view name);

struct ArchModelSpec {
  ArchFamily family = ArchFamily::kPhi3;
  uint64_t seed = 1;
};

// The model as a writer. Errors only when stories260K.gguf (the tokenizer) cannot be read.
Result<GgufWriter> MakeArchModel(const ArchModelSpec& spec);
Status WriteArchModel(const ArchModelSpec& spec, const std::string& path);

}  // namespace sparrow::testing
