#pragma once
// How a scheduler drafts tokens for speculative decoding: the kind of drafter and the draft's
// length. The target verifies every draft in one batched pass, so greedy answers stay the
// target's own token for token (token_choice.h says why sampling keeps its distribution too).
#include <cstdint>
#include <optional>
#include <string_view>

namespace sparrow {

class Model;

enum class SpecType {
  kNone,   // no drafting
  kDraft,  // a small model of the same vocabulary proposes (SpecOptions::draft_model)
  kNgram,  // prompt lookup: the continuation of the last n-gram's earlier occurrence
};

// "none", "draft", "ngram"; nullopt for anything else.
std::optional<SpecType> SpecTypeFromName(std::string_view name);
const char* SpecTypeName(SpecType type);

struct SpecOptions {
  SpecType type = SpecType::kNone;
  // Tokens proposed per step at most, and the fewest worth a verification (a shorter draft is
  // dropped and the step decodes one token), as llama.cpp's --draft-max / --draft-min.
  int64_t draft_max = 16;
  int64_t draft_min = 0;
  // The draft model stops at a token whose probability under it is below this: an unsure
  // guess is rarely accepted and costs a verified row (llama.cpp's 0.75).
  double draft_p_min = 0.75;
  // With kDraft: the draft model (same vocabulary, checked by CheckDraftVocab); must outlive
  // the scheduler.
  const Model* draft_model = nullptr;
};

}  // namespace sparrow
