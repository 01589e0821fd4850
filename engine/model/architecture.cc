#include "engine/model/architecture.h"

namespace sparrow {
namespace {

constexpr ArchSpec kArchs[] = {
    {"llama", RopeStyle::kNormal, false, FfnKind::kSwiGlu},
    // Mistral GGUFs normally say "llama"; accept the explicit name too.
    {"mistral", RopeStyle::kNormal, false, FfnKind::kSwiGlu},
    {"qwen2", RopeStyle::kNeox, true, FfnKind::kSwiGlu},
    // PowerInfer's dReLU models (Bamboo, TurboSparse-Mistral): Mistral's shape, ReLU on both.
    {"bamboo", RopeStyle::kNormal, false, FfnKind::kDReluGlu},
};

}  // namespace

const ArchSpec* FindArchSpec(std::string_view name) {
  for (const ArchSpec& a : kArchs) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

std::string_view SupportedArchNames() {
  return "llama, mistral, qwen2, bamboo";
}

}  // namespace sparrow
