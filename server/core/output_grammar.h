#pragma once
// Constrained output for both frontends: what a request asks the answer to keep to
// (OutputFormat: a JSON schema, any JSON object, a GBNF grammar), compiled once per distinct
// source (OutputGrammarCache, one per served model) into a CompiledOutput that makes one matcher
// per choice. Bounds: a source of at most 1 MiB, schemas nested at most kMaxSchemaDepth deep, the
// grammar engine's GrammarLimits and MatcherLimits; the cache keeps kMaxCachedGrammars grammars
// and at most kMaxCachedSymbols symbols (about 64 MiB). Thread-safe.
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/common/result.h"
#include "engine/grammar/grammar.h"
#include "engine/grammar/token_trie.h"
#include "engine/runtime/output_constraint.h"
#include "engine/tokenizer/tokenizer.h"

namespace sparrow::server {

enum class OutputKind { kText, kJsonObject, kJsonSchema, kGrammar };

struct OutputFormat {
  OutputKind kind = OutputKind::kText;
  std::string source;  // kJsonSchema: the schema's JSON text; kGrammar: GBNF
  std::string field;   // the request field it came from, for errors
  // Lazy (tool_choice "auto"): free output until this text (or the control token spelling it),
  // then the grammar.
  std::string trigger = "";
};

inline constexpr int kMaxSchemaDepth = 20;  // subschemas inside subschemas
inline constexpr size_t kMaxCachedGrammars = 64;
inline constexpr size_t kMaxCachedSymbols = size_t{8} << 20;

// A grammar ready to constrain: shared by every choice of every request that asked for it.
class CompiledOutput {
 public:
  CompiledOutput(std::shared_ptr<const grammar::Grammar> grammar,
                 std::shared_ptr<const grammar::TokenTrie> trie, std::string trigger = "",
                 std::vector<TokenId> trigger_ids = {})
      : grammar_(std::move(grammar)),
        trie_(std::move(trie)),
        trigger_(std::move(trigger)),
        trigger_ids_(std::move(trigger_ids)) {}
  // A fresh matcher at the start of the output (one per sequence).
  Result<std::shared_ptr<OutputConstraint>> NewMatcher() const;
  const grammar::Grammar& grammar() const { return *grammar_; }

 private:
  std::shared_ptr<const grammar::Grammar> grammar_;
  std::shared_ptr<const grammar::TokenTrie> trie_;
  std::string trigger_;  // "": the grammar holds from the first token
  std::vector<TokenId> trigger_ids_;
};

class OutputGrammarCache {
 public:
  // `tokenizer` must outlive the cache; its vocabulary trie is built on the first compile.
  explicit OutputGrammarCache(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

  // The compiled form of `format` (not kText). InvalidArgument naming `format.field` and what
  // is wrong: a keyword the schema subset lacks and its JSON pointer, a grammar's line and
  // column, a schema nested too deep.
  Result<std::shared_ptr<const CompiledOutput>> Compile(const OutputFormat& format);
  // Grammars compiled (not found in the cache), for tests and stats.
  size_t compiles() const;

 private:
  std::shared_ptr<const grammar::TokenTrie> Trie();
  Result<grammar::Grammar> CompileSource(const OutputFormat& format) const;

  const Tokenizer& tokenizer_;
  std::once_flag trie_once_;
  std::shared_ptr<const grammar::TokenTrie> trie_;
  mutable std::mutex mu_;
  using Entry = std::pair<std::string, std::shared_ptr<const CompiledOutput>>;
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  size_t symbols_ = 0;
  size_t compiles_ = 0;
};

}  // namespace sparrow::server
