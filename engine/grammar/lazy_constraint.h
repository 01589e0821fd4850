#pragma once
// LazyConstraint: free output until a trigger appears, then a TokenConstraint from the byte
// after it (llama.cpp's lazy grammars). With tool_choice "auto" the model may answer in prose,
// and once it opens a call (the format's marker, e.g. "<tool_call>") the rest of the call keeps
// to the grammar of the tools' schemas. The trigger is a text, or a control token standing for
// it (its id in `trigger_ids`: a control token spells nothing in the vocabulary trie).
// Bytes that came after the trigger inside the same token go to the grammar; if it refuses them
// Accept fails. Memory: the trigger's length of text kept. Not thread-safe: one per sequence.
#include <memory>
#include <string>
#include <vector>

#include "engine/grammar/token_constraint.h"
#include "engine/runtime/output_constraint.h"

namespace sparrow::grammar {

class LazyConstraint final : public OutputConstraint {
 public:
  LazyConstraint(std::unique_ptr<TokenConstraint> inner, std::string trigger,
                 std::vector<TokenId> trigger_ids);

  // Before the trigger nothing is refused.
  Status Mask(std::span<float> logits) override;
  Status Accept(int32_t token) override;
  bool Complete() const override { return active_ && inner_->Complete(); }
  void Prepare() override;
  bool triggered() const { return active_; }

 private:
  std::unique_ptr<TokenConstraint> inner_;
  std::string trigger_;
  std::vector<TokenId> trigger_ids_;
  std::string tail_;  // the end of the output so far, shorter than the trigger
  bool active_ = false;
};

}  // namespace sparrow::grammar
