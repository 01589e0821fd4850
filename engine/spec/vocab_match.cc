#include "engine/spec/vocab_match.h"

#include <algorithm>

namespace sparrow {

Status CheckDraftVocab(const Tokenizer& target, const std::string& target_name,
                       const Tokenizer& draft, const std::string& draft_name) {
  const int32_t n = std::min(target.n_vocab(), draft.n_vocab());
  for (int32_t id = 0; id < n; ++id) {
    if (target.token_text(id) != draft.token_text(id)) {
      return InvalidArgument("draft model '" + draft_name + "' has another vocabulary than '" +
                             target_name + "': token " + std::to_string(id) + " is '" +
                             std::string(draft.token_text(id)) + "' there and '" +
                             std::string(target.token_text(id)) + "' in the target");
    }
  }
  if (target.n_vocab() != draft.n_vocab()) {
    return InvalidArgument("draft model '" + draft_name + "' has " +
                           std::to_string(draft.n_vocab()) + " tokens and '" + target_name + "' " +
                           std::to_string(target.n_vocab()) + ": token " + std::to_string(n) +
                           " is only in " + (target.n_vocab() > n ? "the target" : "the draft"));
  }
  return Status::Ok();
}

}  // namespace sparrow
