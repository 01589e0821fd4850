#include "engine/model/families/experts.h"

#include "engine/model/gguf_file.h"
#include "engine/model/hparam_reader.h"
#include "engine/model/model_config.h"

namespace sparrow::families {

Status ReadExperts(const GgufFile& f, const std::string& p, bool norm_weights,
                   int64_t default_n_ff_exp, ModelConfig& c) {
  SPARROW_ASSIGN_OR_RETURN(c.n_expert, ReadCount(f, p + "expert_count", 4096));
  SPARROW_ASSIGN_OR_RETURN(c.n_expert_used, ReadCount(f, p + "expert_used_count", c.n_expert));
  SPARROW_ASSIGN_OR_RETURN(c.n_ff_exp, ReadCountOr(f, p + "expert_feed_forward_length",
                                                   default_n_ff_exp, int64_t{1} << 20));
  SPARROW_ASSIGN_OR_RETURN(c.expert_weights_scale,
                           ReadFloatOr(f, p + "expert_weights_scale", 1.0, 0, 1e6));
  c.expert_weights_norm = norm_weights;
  return Status::Ok();
}

}  // namespace sparrow::families
