#include "server/core/output_grammar.h"

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/json_schema_grammar.h"
#include "engine/grammar/lazy_constraint.h"
#include "engine/grammar/token_constraint.h"

namespace sparrow::server {

Result<std::shared_ptr<OutputConstraint>> CompiledOutput::NewMatcher() const {
  SPARROW_ASSIGN_OR_RETURN(auto matcher, grammar::TokenConstraint::Create(grammar_, trie_));
  if (trigger_.empty()) return std::shared_ptr<OutputConstraint>(std::move(matcher));
  return std::shared_ptr<OutputConstraint>(
      std::make_shared<grammar::LazyConstraint>(std::move(matcher), trigger_, trigger_ids_));
}

std::shared_ptr<const grammar::TokenTrie> OutputGrammarCache::Trie() {
  std::call_once(trie_once_, [this] {
    trie_ =
        std::make_shared<const grammar::TokenTrie>(grammar::TokenTrie::FromTokenizer(tokenizer_));
  });
  return trie_;
}

Result<grammar::Grammar> OutputGrammarCache::CompileSource(const OutputFormat& f) const {
  grammar::JsonSchemaOptions schema_options;
  schema_options.max_depth = kMaxSchemaDepth;
  switch (f.kind) {
    case OutputKind::kJsonSchema:
      return grammar::CompileJsonSchema(f.source, schema_options);
    case OutputKind::kJsonObject:
      return grammar::ParseGbnf(grammar::AnyJsonObjectGbnf());
    case OutputKind::kGrammar:
      return grammar::ParseGbnf(f.source);
    case OutputKind::kText:
      break;
  }
  return InvalidArgument("no output format to compile");
}

Result<std::shared_ptr<const CompiledOutput>> OutputGrammarCache::Compile(const OutputFormat& f) {
  const std::string key =
      std::to_string(static_cast<int>(f.kind)) + ":" + f.trigger + ":" + f.source;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = index_.find(key); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  // Compiled outside the lock: a large schema does not hold up the others.
  Result<grammar::Grammar> g = CompileSource(f);
  if (!g.ok()) {
    // Every refusal is the client's to fix: a 400 / INVALID_ARGUMENT naming the field.
    return InvalidArgument("'" + f.field + "': " + g.status().message());
  }
  // A trigger that is one control token (Qwen's <tool_call>) spells nothing in the trie.
  std::vector<TokenId> trigger_ids;
  if (!f.trigger.empty()) {
    const TokenId id = tokenizer_.FindToken(f.trigger);
    if (id >= 0) trigger_ids.push_back(id);
  }
  auto compiled = std::make_shared<const CompiledOutput>(
      std::make_shared<const grammar::Grammar>(std::move(g).value()), Trie(), f.trigger,
      std::move(trigger_ids));
  const size_t symbols = compiled->grammar().symbols().size();
  std::lock_guard<std::mutex> lock(mu_);
  ++compiles_;
  if (index_.count(key) == 0 && symbols <= kMaxCachedSymbols) {
    lru_.emplace_front(key, compiled);
    index_[key] = lru_.begin();
    symbols_ += symbols;
    while (lru_.size() > kMaxCachedGrammars || symbols_ > kMaxCachedSymbols) {
      symbols_ -= lru_.back().second->grammar().symbols().size();
      index_.erase(lru_.back().first);
      lru_.pop_back();
    }
  }
  return std::shared_ptr<const CompiledOutput>(std::move(compiled));
}

size_t OutputGrammarCache::compiles() const {
  std::lock_guard<std::mutex> lock(mu_);
  return compiles_;
}

}  // namespace sparrow::server
