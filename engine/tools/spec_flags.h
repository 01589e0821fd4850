#pragma once
// Speculative decoding on the command line, as llama.cpp names it: --model-draft, --draft-max,
// --draft-min, --draft-p-min, and --spec-type draft|ngram|none (draft when a draft model is
// given). LoadSpec loads the draft model and checks that its vocabulary is the target's.
#include <cstdint>
#include <memory>
#include <string>

#include "engine/common/result.h"
#include "engine/model/model.h"
#include "engine/spec/spec_options.h"
#include "engine/tokenizer/tokenizer.h"

namespace CLI {
class App;
}

namespace sparrow::tools {

struct SpecFlags {
  std::string model_draft;
  std::string type;  // "": draft with a draft model, else none
  int64_t draft_max = 16;
  int64_t draft_min = 0;
  double draft_p_min = 0.75;
};

void AddSpecFlags(CLI::App* cmd, SpecFlags& flags);

struct LoadedSpec {
  SpecOptions options;
  std::unique_ptr<Model> draft;  // options.draft_model points here
};
// The options the flags name; errors name the flag, the file, or the first token whose text
// differs between the vocabularies.
Result<LoadedSpec> LoadSpec(const SpecFlags& flags, const Tokenizer& target,
                            const std::string& target_path);

}  // namespace sparrow::tools
