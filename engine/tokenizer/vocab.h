#pragma once
// Vocab: a validated tokenizer vocabulary with the special-token and end-of-generation rules of
// llama.cpp (c392e509; WordPiece as d32676d7) applied: per-type defaults, metadata overrides
// (out-of-range ids are ignored), EOT/EOM/FIM detection by token text, and per-token attributes.
// Built once by Vocab::Create from plain data (VocabData, filled from GGUF by ReadVocabData or by
// hand in tests); immutable afterwards and safe to share between threads.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/common/result.h"
#include "engine/tokenizer/pretokenizer.h"

namespace sparrow {

using TokenId = int32_t;
inline constexpr TokenId kNoToken = -1;
// A special id in VocabData meaning "none" (GGUF files store it as -1 or 0xFFFFFFFF).
inline constexpr int64_t kNoSpecialId = -1;

// Token types as stored in tokenizer.ggml.token_type.
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// Attribute bits (llama_token_attr): the type as one bit plus strip flags.
enum TokenAttr : uint32_t {
  kAttrUndefined = 0,
  kAttrUnknown = 1u << 0,
  kAttrUnused = 1u << 1,
  kAttrNormal = 1u << 2,
  kAttrControl = 1u << 3,
  kAttrUserDefined = 1u << 4,
  kAttrByte = 1u << 5,
  kAttrLStrip = 1u << 7,  // spaces before the token are dropped when it is matched in text
  kAttrRStrip = 1u << 8,  // spaces after it are dropped
};

enum class VocabType {
  kSpm,  // tokenizer.ggml.model = "llama": SentencePiece-style, scores, byte fallback
  kBpe,  // tokenizer.ggml.model = "gpt2": byte-level BPE with merges
  kWpm,  // tokenizer.ggml.model = "bert": WordPiece, word starts written with a leading U+2581
};

enum class SpecialToken {
  kBos,
  kEos,
  kEot,
  kEom,
  kUnk,
  kSep,
  kPad,
  kMask,
  kFimPre,
  kFimSuf,
  kFimMid,
  kFimPad,
  kFimRep,
  kFimSep,
  kCount,
};

// The raw vocabulary description, before validation.
struct VocabData {
  std::string model;  // tokenizer.ggml.model
  std::string pre;    // tokenizer.ggml.pre ("" when absent)
  std::string name;   // general.name (a few models get attribute fixes by name)
  std::vector<std::string> tokens;
  std::vector<float> scores;         // empty, or one per token
  std::vector<int32_t> token_types;  // empty (all normal), or one per token
  std::vector<std::string> merges;   // "left right", BPE only; rank = index
  bool has_merges = false;           // BPE requires the key even when the list is empty
  // Special ids in metadata order (later entries win); kNoSpecialId says the model has no such
  // token; other values outside the vocabulary are ignored with a warning, as llama.cpp does.
  std::vector<std::pair<SpecialToken, int64_t>> special_ids;
  std::optional<bool> add_bos, add_eos, add_space_prefix;
  // tokenizer.ggml.normalizer.lowercase / strip_accents (WordPiece's BertNormalizer); the
  // accents follow lowercase unless the file says.
  std::optional<bool> lowercase, strip_accents;
};

class Vocab {
 public:
  // Validates `data`: Unsupported for unknown models/pre-tokenizers, Corrupt for mismatched
  // array lengths, duplicate or malformed tokens, or BOS/EOS required but missing.
  static Result<Vocab> Create(VocabData data);

  VocabType type() const { return type_; }
  tokenizer::PreTokenizerKind pre() const { return pre_; }
  int32_t size() const { return static_cast<int32_t>(text_.size()); }
  bool Contains(TokenId id) const { return id >= 0 && id < size(); }

  const std::string& text(TokenId id) const { return text_[id]; }
  float score(TokenId id) const { return score_[id]; }
  uint32_t attr(TokenId id) const { return attr_[id]; }
  TokenType EffectiveType(TokenId id) const;
  TokenId Find(std::string_view text) const;  // kNoToken when absent
  // Rank of merging `left` and `right` (lower merges first), or -1.
  int32_t BpeRank(std::string_view left, std::string_view right) const;
  // The token for one raw byte (SPM "<0xNN>" or the byte itself; BPE its alphabet character).
  TokenId ByteToken(uint8_t byte) const;

  TokenId special(SpecialToken s) const { return special_[static_cast<size_t>(s)]; }
  bool IsEog(TokenId id) const;
  const std::vector<TokenId>& eog_ids() const { return eog_; }

  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  bool add_space_prefix() const { return add_space_prefix_; }
  // WordPiece's text normalisation.
  bool lowercase() const { return lowercase_; }
  bool strip_accents() const { return strip_accents_; }
  // The longest token text in bytes (WordPiece's longest match starts there).
  int32_t max_token_len() const { return max_token_len_; }
  bool ignore_merges() const { return ignore_merges_; }
  bool clean_spaces() const { return clean_spaces_; }

  // Control, user-defined and unknown tokens, longest text first: matched in raw text.
  const std::vector<TokenId>& special_tokens() const { return special_tokens_; }
  // llama_token_to_piece(id, special=true) for every id.
  const std::string& piece_with_special(TokenId id) const { return pieces_[id]; }
  // Things a loader may want to log (ignored ids, overridden token types).
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  Vocab() { special_.fill(kNoToken); }

  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using StringMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

  Status InitTokens(VocabData& data);
  Status InitMerges(const VocabData& data);
  Status InitSpecials(const VocabData& data, const tokenizer::PreTokenizerConfig& pre);
  void DetectSpecialsByText();
  void BuildEogSet();
  void ApplyNameFixes(const VocabData& data);
  void BuildPieces();

  VocabType type_ = VocabType::kSpm;
  tokenizer::PreTokenizerKind pre_ = tokenizer::PreTokenizerKind::kDefault;
  std::vector<std::string> text_;
  std::vector<float> score_;
  std::vector<uint32_t> attr_;
  StringMap token_to_id_;
  StringMap bpe_ranks_;  // key "left right"
  std::array<TokenId, static_cast<size_t>(SpecialToken::kCount)> special_;
  std::vector<TokenId> eog_;  // sorted
  bool add_bos_ = false;
  bool add_eos_ = false;
  bool add_space_prefix_ = false;
  bool lowercase_ = true;
  bool strip_accents_ = true;
  int32_t max_token_len_ = 0;
  bool ignore_merges_ = false;
  bool clean_spaces_ = false;
  std::vector<TokenId> special_tokens_;
  std::vector<std::string> pieces_;
  std::vector<std::string> warnings_;
};

std::string_view SpecialTokenName(SpecialToken s);

}  // namespace sparrow
