#pragma once
// The KV cache's element types on the command line, as llama.cpp names them: --cache-type-k
// and --cache-type-v (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1; f16 by default, as
// llama.cpp). CLI11 takes one-letter short names only, so llama.cpp's -ctk/-ctv are not offered.
#include <cstdint>
#include <string>

#include "engine/common/result.h"
#include "engine/runtime/kv_cache.h"

namespace CLI {
class App;
}

namespace sparrow::tools {

struct KvTypeFlags {
  std::string k = "f16";
  std::string v = "f16";
};

void AddKvTypeFlags(CLI::App* cmd, KvTypeFlags& flags);
// The types the flags name, checked against the model's head size (CheckKvTypes).
Result<KvTypes> ParseKvTypeFlags(const KvTypeFlags& flags, int64_t head_dim);

}  // namespace sparrow::tools
