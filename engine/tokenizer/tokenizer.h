#pragma once
// Tokenizer: text <-> token ids for one model vocabulary, behaving exactly like llama.cpp
// (c392e509) for SentencePiece-style ("llama") and byte-level BPE ("gpt2") vocabularies, and
// like d32676d7 for WordPiece ("bert"), read from GGUF metadata. Implementations are immutable
// after loading: every method is const and safe to call from many threads at once.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/result.h"
#include "engine/model/gguf_file.h"
#include "engine/tokenizer/special_partition.h"
#include "engine/tokenizer/vocab.h"

namespace sparrow {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // llama_tokenize: add_special adds BOS/EOS as the vocabulary asks (add_bos()/add_eos()), or
  // for WordPiece always [CLS] (BOS) before and [SEP] after;
  // parse_special lets control tokens written in the text become those tokens. User-defined
  // tokens are matched in the text either way, as in llama.cpp.
  virtual std::vector<TokenId> Tokenize(std::string_view text, bool add_special,
                                        bool parse_special = false) const = 0;
  // Tokenize with parse_special, except that control tokens written inside the `literal`
  // ranges (sorted, disjoint) stay text: for a rendered chat template, whose markers are
  // control tokens and whose messages are user text. Without such text in the ranges the
  // result equals Tokenize(text, add_special, true).
  virtual std::vector<TokenId> TokenizeTemplated(
      std::string_view text, bool add_special,
      std::span<const tokenizer::TextRange> literal) const = 0;

  // llama_token_to_piece(id, lstrip 0, special): the bytes of one token, possibly a partial
  // UTF-8 character. With special false, control and unknown tokens give "". SPM pieces have
  // U+2581 turned into spaces; byte tokens give their byte; BPE pieces are byte-decoded.
  // Ids outside [0, n_vocab) give "".
  virtual std::string_view piece(TokenId id, bool special = false) const = 0;

  // llama_detokenize: concatenated pieces, minus the one space an SPM tokenizer put in front
  // of the text; remove_special drops a leading BOS / trailing EOS the vocabulary adds (and
  // then keeps that space); BPE vocabularies with clean_spaces tidy spaces before punctuation.
  virtual std::string Detokenize(std::span<const TokenId> ids, bool remove_special,
                                 bool unparse_special = false) const = 0;

  virtual VocabType type() const = 0;
  virtual int32_t n_vocab() const = 0;
  bool IsValid(TokenId id) const { return id >= 0 && id < n_vocab(); }
  // kNoToken when the vocabulary has no such token.
  virtual TokenId special(SpecialToken which) const = 0;
  TokenId bos() const { return special(SpecialToken::kBos); }
  TokenId eos() const { return special(SpecialToken::kEos); }
  TokenId eot() const { return special(SpecialToken::kEot); }
  TokenId unk() const { return special(SpecialToken::kUnk); }
  TokenId pad() const { return special(SpecialToken::kPad); }
  virtual bool add_bos() const = 0;
  virtual bool add_eos() const = 0;
  virtual bool add_space_prefix() const = 0;
  // End of generation: EOS, EOT, EOM, FIM pad/repo/sep and tokens such as <|im_end|>.
  virtual bool IsEog(TokenId id) const = 0;
  virtual const std::vector<TokenId>& eog_ids() const = 0;
  // The effective type (llama.cpp promotes some tokens to control); kUndefined for bad ids.
  virtual TokenType token_type(TokenId id) const = 0;
  bool IsControl(TokenId id) const { return token_type(id) == TokenType::kControl; }
  // The raw vocabulary text ("▁Hello", "<0x0A>", "Ġthe"); "" for bad ids.
  virtual std::string_view token_text(TokenId id) const = 0;
  virtual TokenId FindToken(std::string_view text) const = 0;
  // Load-time notes worth logging (ignored special ids, overridden token types).
  virtual const std::vector<std::string>& warnings() const = 0;
};

// Builds the tokenizer described by the file's tokenizer.ggml.* metadata. Everything needed is
// copied, so `file` may be closed afterwards. NotFound when the file has no tokenizer,
// Unsupported for other tokenizer models or pre-tokenizers, Corrupt for malformed metadata;
// messages name the file and the key.
Result<std::unique_ptr<Tokenizer>> LoadTokenizer(const GgufFile& file);
// Builds a tokenizer from a validated vocabulary (tests, other containers).
std::unique_ptr<Tokenizer> CreateTokenizer(Vocab vocab);

}  // namespace sparrow
