#include "engine/model/architecture.h"

namespace sparrow {
namespace {

constexpr ArchSpec kArchs[] = {
    {"llama", RopeStyle::kNormal, false},
    // Mistral GGUFs normally say "llama"; accept the explicit name too.
    {"mistral", RopeStyle::kNormal, false},
    {"qwen2", RopeStyle::kNeox, true},
};

}  // namespace

const ArchSpec* FindArchSpec(std::string_view name) {
  for (const ArchSpec& a : kArchs) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

std::string_view SupportedArchNames() {
  return "llama, mistral, qwen2";
}

}  // namespace sparrow
