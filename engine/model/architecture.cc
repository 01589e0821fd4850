#include "engine/model/architecture.h"

#include "engine/model/families/families.h"

namespace sparrow {
namespace {

constexpr const ArchSpec* kArchs[] = {
    &families::kLlama, &families::kMistral,   &families::kBamboo,  &families::kQwen2,
    &families::kQwen3, &families::kQwen3Moe,  &families::kGemma2,  &families::kGemma3,
    &families::kPhi3,  &families::kOlmoe,     &families::kSmollm3, &families::kSmallthinker,
    &families::kBert,  &families::kNomicBert,
};

}  // namespace

const ArchSpec* FindArchSpec(std::string_view name) {
  for (const ArchSpec* a : kArchs) {
    if (a->name == name) return a;
  }
  return nullptr;
}

std::string SupportedArchNames() {
  std::string s;
  for (const ArchSpec* a : kArchs) s += (s.empty() ? "" : ", ") + std::string(a->name);
  return s;
}

}  // namespace sparrow
