#include "engine/grammar/grammar.h"

#include <utility>

namespace sparrow::grammar {
namespace {

// Rules that can match the empty string, by fixed point.
std::vector<bool> NullableRules(const std::vector<std::vector<Sequence>>& rules) {
  std::vector<bool> nullable(rules.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < rules.size(); ++r) {
      if (nullable[r]) continue;
      for (const Sequence& alt : rules[r]) {
        bool all = true;
        for (const Symbol& s : alt) {
          if (s.kind != Symbol::Kind::kRule || !nullable[s.rule]) {
            all = false;
            break;
          }
        }
        if (all) {
          nullable[r] = true;
          changed = true;
          break;
        }
      }
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
