#include "engine/tools/kv_type_flags.h"

#include <CLI/CLI.hpp>

namespace sparrow::tools {

void AddKvTypeFlags(CLI::App* cmd, KvTypeFlags& flags) {
  const std::string names(KvCacheTypeNames());
  cmd->add_option("--cache-type-k", flags.k, "KV cache type of the keys: " + names)
      ->capture_default_str();
  cmd->add_option("--cache-type-v", flags.v, "KV cache type of the values: " + names)
      ->capture_default_str();
}

Result<KvTypes> ParseKvTypeFlags(const KvTypeFlags& flags, int64_t head_dim) {
  KvTypes types;
  for (const auto& [flag, name, out] : {std::tuple{"--cache-type-k", &flags.k, &types.k},
                                        std::tuple{"--cache-type-v", &flags.v, &types.v}}) {
    const auto type = KvCacheTypeFromName(*name);
    if (!type) {
      return InvalidArgument(std::string(flag) + " " + *name + ": not a KV cache type (" +
                             std::string(KvCacheTypeNames()) + ")");
    }
    *out = *type;
  }
  SPARROW_RETURN_IF_ERROR(CheckKvTypes(types, head_dim));
  return types;
}

}  // namespace sparrow::tools
