#pragma once
// The supported families, one file each; architecture.cc lists them.
#include "engine/model/architecture.h"

namespace sparrow::families {

// llama.cc: llama (Llama 1-3.x, Mistral as 'llama'), mistral, bamboo (PowerInfer's dReLU).
extern const ArchSpec kLlama, kMistral, kBamboo;
// qwen.cc: qwen2 (q/k/v bias), qwen3 (QK-norm), qwen3moe (QK-norm, experts).
extern const ArchSpec kQwen2, kQwen3, kQwen3Moe;
// gemma.cc: gemma2 (soft-capping, sliding window every other layer), gemma3 (QK-norm, sliding
// window five layers in six).
extern const ArchSpec kGemma2, kGemma3;

}  // namespace sparrow::families
