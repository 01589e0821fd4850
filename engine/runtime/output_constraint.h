#pragma once
// OutputConstraint: keeps one sequence's output inside a language (a grammar, a JSON schema), as
// the token choice sees it. Per token: Mask the logits row (refused tokens to -inf), sample, then
// Accept the chosen token. The engine loop knows only this interface; engine/grammar's
// TokenConstraint implements it, so the scheduler does not link the grammar engine.
// Not thread-safe: one per sequence, used by one thread at a time (the engine loop, or the
// helper that computes a mask ahead while the forward pass runs).
#include <cstdint>
#include <span>

#include "engine/common/status.h"

namespace sparrow {

class OutputConstraint {
 public:
  virtual ~OutputConstraint() = default;
  // Sets every refused token's logit to -inf. An error when no token may follow (the language
  // asks for bytes no token spells) or the matcher outgrew its bounds.
  virtual Status Mask(std::span<float> logits) = 0;
  // Advances by the chosen token; an error when the language refuses it.
  virtual Status Accept(int32_t token) = 0;
  // True when the output is whole and nothing but the end may follow: the sequence stops.
  virtual bool Complete() const = 0;
  // Computes the next mask ahead (a cache the next Mask reads), so that it can run beside the
  // forward pass. Optional.
  virtual void Prepare() {}
};

}  // namespace sparrow
