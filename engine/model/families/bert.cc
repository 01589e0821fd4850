// BERT (bge, all-MiniLM: absolute positions, q/k/v biases, GELU FFN with biases) and nomic-bert
// (nomic-embed-text: fused QKV, NeoX rotary, SwiGLU without biases): encoders, post-norm blocks
// with LayerNorms, no output head (ArchSpec::encoder). llama.cpp d32676d7's src/models/bert.cpp
// computes both; token types are type 0 ("sentence A") throughout, as there.
#include "engine/model/families/families.h"
#include "engine/model/gguf_file.h"
#include "engine/model/hparam_reader.h"
#include "engine/model/model_config.h"

namespace sparrow::families {
namespace {

Status ReadLayerNormEps(const GgufFile& f, const std::string& p, ModelConfig& c) {
  const std::string key = p + "attention.layer_norm_epsilon";
  if (!f.Find(key)) return Corrupt(key + " is missing");
  SPARROW_ASSIGN_OR_RETURN(c.norm_eps, ReadFloatOr(f, key, 0, 0, 1));
  return Status::Ok();
}

Status ReadBertHparams(const GgufFile& f, const std::string& p, ModelConfig& c) {
  SPARROW_RETURN_IF_ERROR(ReadLayerNormEps(f, p, c));
  c.no_rope_layers.assign(static_cast<size_t>(c.n_layer), 1);  // positions are embeddings
  return Status::Ok();
}

}  // namespace

const ArchSpec kBert{.name = "bert",
                     .ffn = FfnKind::kGelu,
                     .encoder = true,
                     .abs_positions = true,
                     .read_hparams = ReadBertHparams};
const ArchSpec kNomicBert{.name = "nomic-bert",
                          .rope_style = RopeStyle::kNeox,
                          .encoder = true,
                          .read_hparams = ReadLayerNormEps};

}  // namespace sparrow::families
