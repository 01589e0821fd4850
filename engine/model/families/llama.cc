// Llama 1-3.x (Llama 3.1/3.2 carry rope_freqs), Mistral, and PowerInfer's dReLU Bamboo: the
// base layer, nothing added.
#include "engine/model/families/experts.h"
#include "engine/model/families/families.h"
#include "engine/model/gguf_file.h"
#include "engine/model/model_config.h"

namespace sparrow::families {
namespace {

// Mixtral is llama with experts of feed_forward_length neurons, top-k renormalised.
Status ReadLlamaHparams(const GgufFile& f, const std::string& p, ModelConfig& c) {
  if (!f.Find(p + "expert_count")) return Status::Ok();
  SPARROW_ASSIGN_OR_RETURN(uint64_t n, f.GetUInt(p + "expert_count"));
  if (n == 0) return Status::Ok();
  return ReadExperts(f, p, /*norm_weights=*/true, c.n_ff, c);
}

}  // namespace

const ArchSpec kLlama{.name = "llama", .rope_freqs = true, .read_hparams = ReadLlamaHparams};
// Mistral GGUFs normally say "llama"; accept the explicit name too.
const ArchSpec kMistral{.name = "mistral", .rope_freqs = true};
// PowerInfer's dReLU models (Bamboo, TurboSparse-Mistral): Mistral's shape, ReLU on both.
const ArchSpec kBamboo{.name = "bamboo", .ffn = FfnKind::kDReluGlu};

}  // namespace sparrow::families
