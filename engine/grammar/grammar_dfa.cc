#include "engine/grammar/grammar_dfa.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

namespace sparrow::grammar {

size_t GrammarDfa::VectorHash::operator()(const std::vector<uint32_t>& v) const {
  uint64_t h = 1469598103934665603ull;
  for (uint32_t x : v) h = (h ^ x) * 1099511628211ull;
  return static_cast<size_t>(h ^ (h >> 29));
}

GrammarDfa::GrammarDfa(std::shared_ptr<const Grammar> grammar, MatcherLimits limits)
    : grammar_(std::move(grammar)), limits_(limits) {
  Reset();
  std::vector<std::pair<uint32_t, uint32_t>> work;
  for (uint32_t alt : grammar_->alternatives(grammar_->root())) work.push_back({alt, 0});
  std::vector<uint32_t> tops;
  if (Close(std::move(work), &tops)) initial_ = InternState(std::move(tops));
}

void GrammarDfa::Reset() {
  frames_.clear();
  frame_ids_.clear();
  states_.clear();
  state_ids_.clear();
  frames_.push_back({0, 0, 0});  // the bottom of every stack
  overflowed_ = false;
}

bool GrammarDfa::NearLimits() const {
  return overflowed_ || states_.size() > limits_.max_states / 2 ||
         frames_.size() > limits_.max_frames / 2;
}

int64_t GrammarDfa::InternFrame(uint32_t pos, uint32_t parent) {
  const uint64_t key = (uint64_t{pos} << 32) | parent;
  auto it = frame_ids_.find(key);
  if (it != frame_ids_.end()) return it->second;
  const uint32_t depth = frames_[parent].depth + 1;
  if (depth > limits_.max_stack_depth) return -1;
  if (frames_.size() >= limits_.max_frames) {
    overflowed_ = true;
    return -1;
  }
  const uint32_t id = static_cast<uint32_t>(frames_.size());
  frames_.push_back({pos, parent, depth});
  frame_ids_.emplace(key, id);
  return id;
}

bool GrammarDfa::Close(std::vector<std::pair<uint32_t, uint32_t>> work,
                       std::vector<uint32_t>* tops) {
  const Grammar& g = *grammar_;
  // Most closures visit a handful of items: a linear scan beats a hash set until it grows.
  std::vector<uint64_t>& seen = seen_scratch_;
  std::unordered_set<uint64_t>& seen_many = seen_many_scratch_;
  seen.clear();
  seen_many.clear();
  auto first_visit = [&](uint64_t key) {
    if (seen.size() < 64) {
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) return false;
      seen.push_back(key);
      return true;
    }
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) return false;
    return seen_many.insert(key).second;
  };
  while (!work.empty()) {
    const auto [pos, parent] = work.back();
    work.pop_back();
    if (!first_visit((uint64_t{pos} << 32) | parent)) continue;
    const Symbol& sym = g.at(pos);
    switch (sym.kind) {
      case Symbol::Kind::kEnd:
        if (parent == 0) {
          tops->push_back(0);
        } else {
          work.push_back({frames_[parent].pos, frames_[parent].parent});
        }
        break;
      case Symbol::Kind::kBytes: {
        const int64_t f = InternFrame(pos, parent);
        if (f > 0) tops->push_back(static_cast<uint32_t>(f));
        break;
      }
      case Symbol::Kind::kRule: {
        // A reference in tail position returns straight to the parent: right recursion and
        // long repetitions keep the stack flat.
        uint32_t cont = parent;
        if (g.at(pos + 1).kind != Symbol::Kind::kEnd) {
          const int64_t f = InternFrame(pos + 1, parent);
          if (f < 0) break;
          cont = static_cast<uint32_t>(f);
        }
        for (uint32_t alt : g.alternatives(sym.rule)) work.push_back({alt, cont});
        break;
      }
    }
    if (overflowed_) return false;
  }
  std::sort(tops->begin(), tops->end());
  tops->erase(std::unique(tops->begin(), tops->end()), tops->end());
  if (tops->size() > limits_.max_stacks) {
    overflowed_ = true;
    return false;
  }
  return !tops->empty();
}

GrammarDfa::StateId GrammarDfa::InternState(std::vector<uint32_t> tops) {
  auto it = state_ids_.find(tops);
  if (it != state_ids_.end()) return it->second;
  if (states_.size() >= limits_.max_states) {
    overflowed_ = true;
    return kDead;
  }
  const StateId id = static_cast<StateId>(states_.size());
  StateEntry entry;
  entry.accepts = !tops.empty() && tops[0] == 0;
  entry.stacks = tops;
  states_.push_back(std::move(entry));
  state_ids_.emplace(std::move(tops), id);
  return id;
}

GrammarDfa::StateId GrammarDfa::StepSlow(StateId state, uint8_t byte) {
  std::vector<std::pair<uint32_t, uint32_t>> work;
  for (uint32_t top : states_[state].stacks) {
    if (top == 0) continue;
    const Frame& f = frames_[top];
    if (grammar_->at(f.pos).Matches(byte)) work.push_back({f.pos + 1, f.parent});
  }
  StateId next = kDead;
  if (!work.empty()) {
    std::vector<uint32_t> tops;
    if (Close(std::move(work), &tops)) next = InternState(std::move(tops));
  }
  if (overflowed_) return kDead;   // not cached: Compact may make room
  StateEntry& s = states_[state];  // InternState may have moved the entries
  if (!s.next) {
    s.next = std::make_unique<std::array<int32_t, 256>>();
    s.next->fill(kUnknown);
  }
  (*s.next)[byte] = next;
  return next;
}

GrammarDfa::StateId GrammarDfa::Compact(StateId keep) {
  // Each stack as its list of positions, bottom first.
  std::vector<std::vector<uint32_t>> stacks;
  for (uint32_t top : states_[keep].stacks) {
    std::vector<uint32_t> chain;
    for (uint32_t f = top; f != 0; f = frames_[f].parent) chain.push_back(frames_[f].pos);
    std::reverse(chain.begin(), chain.end());
    stacks.push_back(std::move(chain));
  }
  const bool initial_is_keep = keep == initial_;
  Reset();
  std::vector<uint32_t> tops;
  for (const std::vector<uint32_t>& chain : stacks) {
    uint32_t f = 0;
    for (uint32_t pos : chain) f = static_cast<uint32_t>(InternFrame(pos, f));
    tops.push_back(f);
  }
  std::sort(tops.begin(), tops.end());
  const StateId kept = InternState(std::move(tops));
  initial_ = kDead;
  if (initial_is_keep) {
    initial_ = kept;
  } else {
    std::vector<std::pair<uint32_t, uint32_t>> work;
    for (uint32_t alt : grammar_->alternatives(grammar_->root())) work.push_back({alt, 0});
    std::vector<uint32_t> init_tops;
    if (Close(std::move(work), &init_tops)) initial_ = InternState(std::move(init_tops));
  }
  return kept;
}

}  // namespace sparrow::grammar
