// The one Tokenizer implementation: the llama.cpp pipeline over a Vocab. The SPM, BPE and
// WordPiece paths differ only in how a text fragment is encoded and how a text is framed.
#include "engine/tokenizer/tokenizer.h"

#include <utility>

#include "engine/tokenizer/bpe_encoder.h"
#include "engine/tokenizer/detokenize.h"
#include "engine/tokenizer/special_partition.h"
#include "engine/tokenizer/spm_encoder.h"
#include "engine/tokenizer/vocab_gguf.h"
#include "engine/tokenizer/wpm_encoder.h"

namespace sparrow {
namespace {

// Immutable; thread-safe.
class VocabTokenizer final : public Tokenizer {
 public:
  explicit VocabTokenizer(Vocab vocab) : vocab_(std::move(vocab)) {}

  std::vector<TokenId> Tokenize(std::string_view text, bool add_special,
                                bool parse_special) const override {
    return Encode(text, add_special, parse_special, {});
  }

  std::vector<TokenId> TokenizeTemplated(
      std::string_view text, bool add_special,
      std::span<const tokenizer::TextRange> literal) const override {
    return Encode(text, add_special, true, literal);
  }

  std::string_view piece(TokenId id, bool special) const override {
    return tokenizer::Piece(vocab_, id, special);
  }

  std::string Detokenize(std::span<const TokenId> ids, bool remove_special,
                         bool unparse_special) const override {
    return tokenizer::Detokenize(vocab_, ids, remove_special, unparse_special);
  }

  VocabType type() const override { return vocab_.type(); }
  int32_t n_vocab() const override { return vocab_.size(); }
  TokenId special(SpecialToken which) const override {
    return which == SpecialToken::kCount ? kNoToken : vocab_.special(which);
  }
  bool add_bos() const override { return vocab_.add_bos(); }
  bool add_eos() const override { return vocab_.add_eos(); }
  bool add_space_prefix() const override { return vocab_.add_space_prefix(); }
  bool IsEog(TokenId id) const override { return vocab_.IsEog(id); }
  const std::vector<TokenId>& eog_ids() const override { return vocab_.eog_ids(); }
  TokenType token_type(TokenId id) const override {
    return vocab_.Contains(id) ? vocab_.EffectiveType(id) : TokenType::kUndefined;
  }
  std::string_view token_text(TokenId id) const override {
    return vocab_.Contains(id) ? std::string_view(vocab_.text(id)) : std::string_view();
  }
  TokenId FindToken(std::string_view text) const override { return vocab_.Find(text); }
  const std::vector<std::string>& warnings() const override { return vocab_.warnings(); }

 private:
  std::vector<TokenId> Encode(std::string_view text, bool add_special, bool parse_special,
                              std::span<const tokenizer::TextRange> literal) const {
    std::vector<TokenId> out;
    const bool spm = vocab_.type() == VocabType::kSpm;
    const bool wpm = vocab_.type() == VocabType::kWpm;
    // WordPiece frames every text [CLS] ... [SEP] (the vocabulary has both: Vocab::Create).
    if (add_special && (vocab_.add_bos() || wpm)) out.push_back(vocab_.special(SpecialToken::kBos));
    // SPM puts a space in front of the text and after every special token.
    bool after_special = true;
    std::string buf;
    for (const tokenizer::Fragment& f :
         tokenizer::PartitionSpecialTokens(vocab_, text, parse_special, literal)) {
      if (f.token != kNoToken) {
        out.push_back(f.token);
        after_special = true;
        continue;
      }
      const std::string_view part = text.substr(f.offset, f.length);
      if (wpm) {
        tokenizer::WpmEncode(vocab_, part, &out);
        continue;
      }
      if (!spm) {
        tokenizer::BpeEncode(vocab_, part, &out);
        continue;
      }
      buf.clear();
      if (vocab_.add_space_prefix() && after_special) buf.push_back(' ');
      buf.append(part);
      tokenizer::SpmEncode(vocab_, tokenizer::EscapeSpmSpaces(buf), &out);
      after_special = false;
    }
    if (add_special && wpm) {
      out.push_back(vocab_.special(SpecialToken::kSep));
    } else if (add_special && vocab_.add_eos()) {
      out.push_back(vocab_.special(SpecialToken::kEos));
    }
    return out;
  }

  Vocab vocab_;
};

}  // namespace

std::unique_ptr<Tokenizer> CreateTokenizer(Vocab vocab) {
  return std::make_unique<VocabTokenizer>(std::move(vocab));
}

Result<std::unique_ptr<Tokenizer>> LoadTokenizer(const GgufFile& file) {
  SPARROW_ASSIGN_OR_RETURN(VocabData data, ReadVocabData(file));
  Result<Vocab> vocab = Vocab::Create(std::move(data));
  if (!vocab.ok()) return vocab.status().WithContext(file.path());
  return CreateTokenizer(std::move(vocab).value());
}

}  // namespace sparrow
