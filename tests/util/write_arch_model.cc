// write_arch_model: writes one synthetic model of synthetic_arch.h, for making the files behind
// tests/golden/arch/*.json (see its README).
// usage: write_arch_model FAMILY OUT.gguf [SEED]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/util/synthetic_arch.h"

int main(int argc, char** argv) {
  using sparrow::testing::ArchModelSpec;
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr,
                 "usage: %s FAMILY OUT.gguf [SEED]\n"
                 "FAMILY: phi3, gemma2, mixtral, olmoe, smollm3, smallthinker, llamayarn, bert, "
                 "nomic-bert,\n"
                 "qwen3rerank, qwen3rerankplain; SEED default 1\n",
                 argv[0]);
    return 2;
  }
  const auto family = sparrow::testing::ParseArchFamily(argv[1]);
  if (!family) {
    std::fprintf(stderr, "write_arch_model: unknown family '%s'\n", argv[1]);
    return 2;
  }
  ArchModelSpec spec;
  spec.family = *family;
  if (argc == 4) spec.seed = std::strtoull(argv[3], nullptr, 10);
  const sparrow::Status s = sparrow::testing::WriteArchModel(spec, argv[2]);
  if (!s.ok()) {
    std::fprintf(stderr, "write_arch_model: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
