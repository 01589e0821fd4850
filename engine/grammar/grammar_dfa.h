#pragma once
// GrammarDfa: the pushdown matcher of a Grammar, determinized lazily. A matcher state is a set
// of parse stacks (as in llama.cpp's grammar sampler); here each stack is a chain of interned
// frames (rule position + the frame to return to), so equal stacks are one integer, a set of
// stacks is a sorted list of integers, and each distinct set is interned once as a StateId.
// Step(state, byte) is computed on first use and then cached, so walking the vocabulary trie
// from a state the sequence has seen before costs one table lookup per trie edge.
// Bounded: a stack deeper than max_stack_depth is dropped, and a state with more than
// max_stacks stacks, or growth past max_states / max_frames, makes Step return kDead and sets
// overflowed(); the owner compacts (Compact) between tokens. Not thread-safe: one per sequence.
#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/grammar/grammar.h"

namespace sparrow::grammar {

struct MatcherLimits {
  uint32_t max_stack_depth = 1024;  // frames in one parse stack (nesting of the output)
  size_t max_stacks = 4096;         // parse stacks alive at once (ambiguity)
  size_t max_states = 16384;        // interned stack sets (each may hold a 1 KiB step table)
  size_t max_frames = 1 << 22;      // interned frames
};

class GrammarDfa {
 public:
  using StateId = int32_t;
  static constexpr StateId kDead = -1;

  GrammarDfa(std::shared_ptr<const Grammar> grammar, MatcherLimits limits);

  // The state before any byte; kDead when the root cannot start (overflow).
  StateId initial() const { return initial_; }
  // The state after `byte`, or kDead when no stack can take it.
  StateId Step(StateId state, uint8_t byte) {
    StateEntry& s = states_[state];
    if (s.next) {
      const int32_t cached = (*s.next)[byte];
      if (cached != kUnknown) return cached;
    }
    return StepSlow(state, byte);
  }
  // True when the grammar has matched completely in `state` (an empty stack is in the set).
  bool Accepts(StateId state) const { return states_[state].accepts; }
  // True when no byte can follow (only the end is allowed).
  bool IsTerminal(StateId state) const { return states_[state].stacks == std::vector<uint32_t>{0}; }

  bool overflowed() const { return overflowed_; }
  // True when the tables have grown past half their limits: time to Compact.
  bool NearLimits() const;
  // Forgets every state but `keep` (rebuilt from its stacks); returns keep's new id.
  StateId Compact(StateId keep);
  size_t state_count() const { return states_.size(); }
  size_t frame_count() const { return frames_.size(); }
  const Grammar& grammar() const { return *grammar_; }

 private:
  static constexpr int32_t kUnknown = -2;
  struct Frame {
    uint32_t pos;     // the symbol to match next (top frame: a byte range)
    uint32_t parent;  // frame to continue in once this rule ends; 0 = the bottom
    uint32_t depth;
  };
  struct StateEntry {
    std::vector<uint32_t> stacks;  // sorted top-frame ids; 0 is the empty (accepted) stack
    bool accepts = false;
    std::unique_ptr<std::array<int32_t, 256>> next;
  };
  struct VectorHash {
    size_t operator()(const std::vector<uint32_t>& v) const;
  };

  StateId StepSlow(StateId state, uint8_t byte);
  // Expands the work list of (position, parent frame) to the set of top frames.
  bool Close(std::vector<std::pair<uint32_t, uint32_t>> work, std::vector<uint32_t>* tops);
  int64_t InternFrame(uint32_t pos, uint32_t parent);  // -1 when too deep or full
  StateId InternState(std::vector<uint32_t> tops);
  void Reset();

  std::shared_ptr<const Grammar> grammar_;
  MatcherLimits limits_;
  std::vector<Frame> frames_;
  std::unordered_map<uint64_t, uint32_t> frame_ids_;
  std::vector<StateEntry> states_;
  std::unordered_map<std::vector<uint32_t>, StateId, VectorHash> state_ids_;
  StateId initial_ = kDead;
  bool overflowed_ = false;
  std::vector<uint64_t> seen_scratch_;  // Close's visited items, reused
  std::unordered_set<uint64_t> seen_many_scratch_;
};

}  // namespace sparrow::grammar
