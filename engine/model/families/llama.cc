// Llama 1-3.x (Llama 3.1/3.2 carry rope_freqs), Mistral, and PowerInfer's dReLU Bamboo: the
// base layer, nothing added.
#include "engine/model/families/families.h"

namespace sparrow::families {

const ArchSpec kLlama{.name = "llama", .rope_freqs = true};
// Mistral GGUFs normally say "llama"; accept the explicit name too.
const ArchSpec kMistral{.name = "mistral", .rope_freqs = true};
// PowerInfer's dReLU models (Bamboo, TurboSparse-Mistral): Mistral's shape, ReLU on both.
const ArchSpec kBamboo{.name = "bamboo", .ffn = FfnKind::kDReluGlu};

}  // namespace sparrow::families
