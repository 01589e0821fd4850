#include "engine/tools/spec_flags.h"

#include <CLI/CLI.hpp>

#include "engine/spec/vocab_match.h"

namespace sparrow::tools {

void AddSpecFlags(CLI::App* cmd, SpecFlags& f) {
  cmd->add_option("--model-draft", f.model_draft,
                  "Draft model for speculative decoding (same vocabulary as the model)");
  cmd->add_option("--spec-type", f.type,
                  "Speculative decoding: draft (the draft model proposes), ngram (prompt lookup) "
                  "or none (default: draft with --model-draft, else none)")
      ->check(CLI::IsMember({"draft", "ngram", "none"}));
  cmd->add_option("--draft-max", f.draft_max, "Draft tokens verified per step at most")
      ->check(CLI::Range(int64_t{1}, int64_t{256}))
      ->capture_default_str();
  cmd->add_option("--draft-min", f.draft_min, "Drafts shorter than this are not verified")
      ->check(CLI::Range(int64_t{0}, int64_t{256}))
      ->capture_default_str();
  cmd->add_option("--draft-p-min", f.draft_p_min,
                  "The draft model stops at a token it gives less probability than this")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
}

Result<LoadedSpec> LoadSpec(const SpecFlags& f, const Tokenizer& target,
                            const std::string& target_path) {
  LoadedSpec out;
  const std::string type = f.type.empty() ? (f.model_draft.empty() ? "none" : "draft") : f.type;
  out.options.type = SpecTypeFromName(type).value_or(SpecType::kNone);
  out.options.draft_max = f.draft_max;
  out.options.draft_min = f.draft_min;
  out.options.draft_p_min = f.draft_p_min;
  if (f.draft_min > f.draft_max) {
    return InvalidArgument("--draft-min " + std::to_string(f.draft_min) +
                           " is more than --draft-max " + std::to_string(f.draft_max));
  }
  if (out.options.type != SpecType::kDraft) return out;
  if (f.model_draft.empty()) return InvalidArgument("--spec-type draft needs --model-draft");
  SPARROW_ASSIGN_OR_RETURN(out.draft, Model::Load(f.model_draft));
  auto tok = LoadTokenizer(out.draft->file());
  if (!tok.ok()) return tok.status().WithContext(f.model_draft);
  SPARROW_RETURN_IF_ERROR(CheckDraftVocab(target, target_path, **tok, f.model_draft));
  out.options.draft_model = out.draft.get();
  return out;
}

}  // namespace sparrow::tools
