// write_mmproj: writes the synthetic gemma3 projector of synthetic_projector.h, for making the
// golden embeddings of tests/golden/vision (see its README).
// usage: write_mmproj OUT.gguf [SEED] [f32|f16]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/util/synthetic_projector.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: %s OUT.gguf [SEED] [f32|f16]\n", argv[0]);
    return 2;
  }
  sparrow::testing::ProjectorSpec spec;
  if (argc >= 3) spec.seed = std::strtoull(argv[2], nullptr, 10);
  if (argc == 4) {
    const std::string type = argv[3];
    if (type == "f16") {
      spec.matrix_type = sparrow::TensorType::kF16;
    } else if (type != "f32") {
      std::fprintf(stderr, "write_mmproj: type '%s' is not f32 or f16\n", argv[3]);
      return 2;
    }
  }
  const sparrow::Status s = sparrow::testing::WriteGemma3Projector(spec, argv[1]);
  if (!s.ok()) {
    std::fprintf(stderr, "write_mmproj: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
