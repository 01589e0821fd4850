#pragma once
// The supported families, one file each; architecture.cc lists them.
#include "engine/model/architecture.h"

namespace sparrow::families {

// llama.cc: llama (Llama 1-3.x, Mistral as 'llama', Mixtral: llama with experts), mistral,
// bamboo (PowerInfer's dReLU).
extern const ArchSpec kLlama, kMistral, kBamboo;
// qwen.cc: qwen2 (q/k/v bias), qwen3 (QK-norm), qwen3moe (QK-norm, experts).
extern const ArchSpec kQwen2, kQwen3, kQwen3Moe;
// gemma.cc: gemma2 (soft-capping, sliding window every other layer), gemma3 (QK-norm, sliding
// window five layers in six).
extern const ArchSpec kGemma2, kGemma3;

// phi.cc: phi3 (Phi-3.5, Phi-4-mini: fused QKV and gate-up, LongRoPE factors, partial rotary).
extern const ArchSpec kPhi3;
// olmoe.cc: olmoe (QK-norm over whole rows, experts without renormalisation).
extern const ArchSpec kOlmoe;
// smol.cc: smollm3 (every fourth layer without RoPE), smallthinker (router before attention,
// sigmoid gating, ReLU experts).
extern const ArchSpec kSmollm3, kSmallthinker;
// bert.cc: bert (bge, all-MiniLM) and nomic-bert (rotary, SwiGLU): encoders, for embeddings.
extern const ArchSpec kBert, kNomicBert;

}  // namespace sparrow::families
