#include "engine/grammar/grammar.h"

#include <utility>

namespace sparrow::grammar {
namespace {

// Rules that can match the empty string. A worklist, not a fixed point over all rules: a
// hostile chain of rules each nullable through the next would make passes quadratic.
std::vector<bool> NullableRules(const std::vector<std::vector<Sequence>>& rules) {
  std::vector<bool> nullable(rules.size(), false);
  // For each alternative, the references not yet known nullable; byte symbols never are.
  struct Alt {
    uint32_t rule;
    size_t pending;
  };
  std::vector<Alt> alts;
  std::vector<std::vector<size_t>> uses(rules.size());  // rule -> alternatives naming it
  std::vector<uint32_t> ready;
  for (uint32_t r = 0; r < rules.size(); ++r) {
    for (const Sequence& seq : rules[r]) {
      bool has_bytes = false;
      for (const Symbol& sym : seq) has_bytes = has_bytes || sym.kind != Symbol::Kind::kRule;
      if (has_bytes) continue;
      const size_t id = alts.size();
      alts.push_back({r, seq.size()});
      for (const Symbol& sym : seq) uses[sym.rule].push_back(id);
      if (seq.empty()) ready.push_back(r);
    }
  }
  while (!ready.empty()) {
    const uint32_t r = ready.back();
    ready.pop_back();
    if (nullable[r]) continue;
    nullable[r] = true;
    for (size_t id : uses[r]) {
      if (--alts[id].pending == 0) ready.push_back(alts[id].rule);
    }
  }
  return nullable;
}

// The first rule found on a cycle of "A can begin with B" edges, or -1.
int64_t FindLeftRecursion(const std::vector<std::vector<Sequence>>& rules) {
  const std::vector<bool> nullable = NullableRules(rules);
  std::vector<std::vector<uint32_t>> left(rules.size());
  for (size_t r = 0; r < rules.size(); ++r) {
    for (const Sequence& alt : rules[r]) {
      for (const Symbol& s : alt) {
        if (s.kind != Symbol::Kind::kRule) break;
        left[r].push_back(s.rule);
        if (!nullable[s.rule]) break;
      }
    }
  }
  // Iterative depth-first search: 0 unseen, 1 on the path, 2 done.
  std::vector<uint8_t> color(rules.size(), 0);
  std::vector<std::pair<uint32_t, size_t>> path;
  for (uint32_t start = 0; start < rules.size(); ++start) {
    if (color[start] != 0) continue;
    path.push_back({start, 0});
    color[start] = 1;
    while (!path.empty()) {
      auto& [r, next] = path.back();
      if (next == left[r].size()) {
        color[r] = 2;
        path.pop_back();
        continue;
      }
      const uint32_t to = left[r][next++];
      if (color[to] == 1) return to;
      if (color[to] == 0) {
        color[to] = 1;
        path.push_back({to, 0});
      }
    }
  }
  return -1;
}

}  // namespace

Result<Grammar> Grammar::Create(std::vector<std::vector<Sequence>> rules,
                                std::vector<std::string> names, uint32_t root) {
  if (root >= rules.size()) return InvalidArgument("grammar: the root rule is missing");
  names.resize(rules.size());
  for (size_t r = 0; r < rules.size(); ++r) {
    if (rules[r].empty()) return InvalidArgument("grammar: rule '" + names[r] + "' is empty");
    for (const Sequence& alt : rules[r]) {
      for (const Symbol& s : alt) {
        if (s.kind == Symbol::Kind::kEnd) return Internal("grammar: End inside a sequence");
        if (s.kind == Symbol::Kind::kRule && s.rule >= rules.size()) {
          return InvalidArgument("grammar: rule '" + names[r] + "' refers to rule " +
                                 std::to_string(s.rule) + " which does not exist");
        }
      }
    }
  }
  if (int64_t bad = FindLeftRecursion(rules); bad >= 0) {
    return InvalidArgument("grammar: rule '" + names[bad] +
                           "' is left recursive (it can reach itself before any character)");
  }
  Grammar g;
  g.root_ = root;
  g.names_ = std::move(names);
  g.alt_starts_.resize(rules.size());
  for (size_t r = 0; r < rules.size(); ++r) {
    for (const Sequence& alt : rules[r]) {
      g.alt_starts_[r].push_back(static_cast<uint32_t>(g.symbols_.size()));
      g.symbols_.insert(g.symbols_.end(), alt.begin(), alt.end());
      g.symbols_.push_back(Symbol::End());
    }
  }
  return g;
}

}  // namespace sparrow::grammar
