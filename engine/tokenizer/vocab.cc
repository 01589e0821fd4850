#include "engine/tokenizer/vocab.h"

#include <algorithm>
#include <limits>

#include "engine/tokenizer/byte_encoding.h"
#include "engine/tokenizer/unicode.h"

namespace sparrow {
namespace {

uint32_t AttrFromType(int32_t type) {
  switch (static_cast<TokenType>(type)) {
    case TokenType::kNormal:
      return kAttrNormal;
    case TokenType::kUnknown:
      return kAttrUnknown;
    case TokenType::kControl:
      return kAttrControl;
    case TokenType::kUserDefined:
      return kAttrUserDefined;
    case TokenType::kUnused:
      return kAttrUnused;
    case TokenType::kByte:
      return kAttrByte;
    default:
      return kAttrUndefined;
  }
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Parses "<0xNN>"; -1 when `text` has another shape.
int ParseByteToken(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  const int hi = HexValue(text[3]);
  const int lo = HexValue(text[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// SentencePiece writes spaces as U+2581 ("▁").
std::string UnescapeSpm(std::string_view text) {
  static constexpr std::string_view kSpace = "\xE2\x96\x81";
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text.substr(i, kSpace.size()) == kSpace) {
      out.push_back(' ');
      i += kSpace.size();
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

// Maps GPT-2 alphabet characters back to bytes. Characters outside the alphabet are written the
// way llama.cpp writes them (a bracketed marker), so pieces stay byte-identical to its output.
std::string DecodeByteLevel(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (uint32_t cpt : tokenizer::DecodeUtf8Lossy(text)) {
    if (auto b = tokenizer::UnicodeToByte(cpt)) {
      out.push_back(static_cast<char>(*b));
      continue;
    }
    out += "[UNK_BYTE_0x";
    for (char c : tokenizer::EncodeUtf8(cpt)) {
      out.push_back(kHex[static_cast<uint8_t>(c) >> 4]);
      out.push_back(kHex[static_cast<uint8_t>(c) & 15]);
    }
    out.append(text);
    out.push_back(']');
  }
  return out;
}

}  // namespace

std::string_view SpecialTokenName(SpecialToken s) {
  static constexpr std::string_view kNames[] = {
      "bos",  "eos",     "eot",     "eom",     "unknown", "seperator", "padding",
      "mask", "fim_pre", "fim_suf", "fim_mid", "fim_pad", "fim_rep",   "fim_sep",
  };
  const int i = static_cast<int>(s);
  return i >= 0 && i < static_cast<int>(SpecialToken::kCount) ? kNames[i] : "?";
}

Result<Vocab> Vocab::Create(VocabData data) {
  Vocab v;
  tokenizer::PreTokenizerConfig pre;
  if (data.model == "llama") {
    v.type_ = VocabType::kSpm;
    v.add_space_prefix_ = true;
    v.add_bos_ = true;
  } else if (data.model == "gpt2") {
    v.type_ = VocabType::kBpe;
    SPARROW_ASSIGN_OR_RETURN(pre, tokenizer::LookupPreTokenizer(data.pre));
    v.pre_ = pre.kind;
    v.ignore_merges_ = pre.ignore_merges;
    v.add_bos_ = pre.forces_add_bos;
    v.clean_spaces_ = pre.clean_spaces;
    if (data.pre.empty()) {
      v.warnings_.push_back("tokenizer.ggml.pre is missing; using the 'default' pre-tokenizer");
    }
  } else if (data.model == "bert") {
    // llama.cpp ignores tokenizer.ggml.pre for WordPiece.
    v.type_ = VocabType::kWpm;
    v.add_bos_ = true;  // [CLS]
    v.clean_spaces_ = true;
  } else {
    return Unsupported("tokenizer.ggml.model '" + data.model +
                       "' is not supported (supported: 'llama', 'gpt2', 'bert')");
  }
  if (data.add_space_prefix) v.add_space_prefix_ = *data.add_space_prefix;
  if (data.lowercase) v.lowercase_ = *data.lowercase;
  v.strip_accents_ = data.strip_accents.value_or(v.lowercase_);

  SPARROW_RETURN_IF_ERROR(v.InitTokens(data));
  if (v.type_ == VocabType::kBpe) SPARROW_RETURN_IF_ERROR(v.InitMerges(data));
  SPARROW_RETURN_IF_ERROR(v.InitSpecials(data, pre));
  v.BuildPieces();
  v.ApplyNameFixes(data);
  return v;
}

Status Vocab::InitTokens(VocabData& data) {
  const size_t n = data.tokens.size();
  if (n == 0) return Corrupt("tokenizer.ggml.tokens is empty");
  if (n > static_cast<size_t>(std::numeric_limits<TokenId>::max())) {
    return Corrupt("tokenizer.ggml.tokens has " + std::to_string(n) + " entries, too many");
  }
  if (!data.scores.empty() && data.scores.size() != n) {
    return Corrupt("tokenizer.ggml.scores has " + std::to_string(data.scores.size()) +
                   " entries but tokenizer.ggml.tokens has " + std::to_string(n));
  }
  if (!data.token_types.empty() && data.token_types.size() != n) {
    return Corrupt("tokenizer.ggml.token_type has " + std::to_string(data.token_types.size()) +
                   " entries but tokenizer.ggml.tokens has " + std::to_string(n));
  }
  text_ = std::move(data.tokens);
  score_ = data.scores.empty() ? std::vector<float>(n, 0.0f) : std::move(data.scores);
  attr_.assign(n, kAttrNormal);
  token_to_id_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!data.token_types.empty()) attr_[i] = AttrFromType(data.token_types[i]);
    if (text_[i].empty()) {
      // llama.cpp gives empty tokens a placeholder text so that lookups stay unambiguous.
      text_[i] = "[EMPTY_" + std::to_string(i) + "]";
      warnings_.push_back("empty token at index " + std::to_string(i));
    }
    max_token_len_ = std::max(max_token_len_, static_cast<int32_t>(text_[i].size()));
    auto [it, inserted] = token_to_id_.emplace(text_[i], static_cast<TokenId>(i));
    if (!inserted) {
      return Corrupt("tokenizer.ggml.tokens: token " + std::to_string(i) + " '" + text_[i] +
                     "' duplicates token " + std::to_string(it->second));
    }
    if (type_ == VocabType::kSpm && (attr_[i] & kAttrByte) && ParseByteToken(text_[i]) < 0) {
      return Corrupt("tokenizer.ggml.tokens: token " + std::to_string(i) + " '" + text_[i] +
                     "' has type BYTE but is not of the form <0xNN>");
    }
  }
  return Status::Ok();
}

Status Vocab::InitMerges(const VocabData& data) {
  if (!data.has_merges) return Corrupt("tokenizer.ggml.merges is missing (required for 'gpt2')");
  bpe_ranks_.reserve(data.merges.size());
  for (size_t i = 0; i < data.merges.size(); ++i) {
    const std::string& m = data.merges[i];
    // The separator is the first space after the first character, as in llama.cpp.
    const size_t sep = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    if (sep == std::string::npos) {
      warnings_.push_back("tokenizer.ggml.merges[" + std::to_string(i) + "] '" + m +
                          "' has no separator; ignored");
      continue;
    }
    bpe_ranks_.emplace(m, static_cast<int32_t>(i));  // the first rank of a pair wins
  }
  return Status::Ok();
}

TokenType Vocab::EffectiveType(TokenId id) const {
  const uint32_t a = attr_[id];
  if (a & kAttrControl) return TokenType::kControl;
  if (a & kAttrUserDefined) return TokenType::kUserDefined;
  if (a & kAttrUnknown) return TokenType::kUnknown;
  if (a & kAttrByte) return TokenType::kByte;
  if (a & kAttrUnused) return TokenType::kUnused;
  if (a & kAttrNormal) return TokenType::kNormal;
  return TokenType::kUndefined;
}

TokenId Vocab::Find(std::string_view text) const {
  auto it = token_to_id_.find(text);
  return it == token_to_id_.end() ? kNoToken : it->second;
}

int32_t Vocab::BpeRank(std::string_view left, std::string_view right) const {
  std::string key;
  key.reserve(left.size() + right.size() + 1);
  key.append(left).push_back(' ');
  key.append(right);
  auto it = bpe_ranks_.find(key);
  return it == bpe_ranks_.end() ? -1 : it->second;
}

TokenId Vocab::ByteToken(uint8_t byte) const {
  if (type_ != VocabType::kSpm) return Find(tokenizer::ByteToUnicodeUtf8(byte));
  static constexpr char kHex[] = "0123456789ABCDEF";
  const char name[6] = {'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>'};
  const TokenId id = Find(std::string_view(name, 6));
  if (id != kNoToken) return id;
  const char raw = static_cast<char>(byte);
  return Find(std::string_view(&raw, 1));
}

bool Vocab::IsEog(TokenId id) const {
  return id != kNoToken && std::binary_search(eog_.begin(), eog_.end(), id);
}

void Vocab::BuildPieces() {
  pieces_.resize(text_.size());
  for (size_t i = 0; i < text_.size(); ++i) {
    const uint32_t a = attr_[i];
    const std::string& t = text_[i];
    if (a & (kAttrUnknown | kAttrControl | kAttrUserDefined)) {
      pieces_[i] = t;
    } else if (a & kAttrNormal) {
      pieces_[i] = type_ == VocabType::kBpe ? DecodeByteLevel(t) : UnescapeSpm(t);
    } else if ((a & kAttrByte) && type_ == VocabType::kSpm) {
      pieces_[i] = std::string(1, static_cast<char>(ParseByteToken(t)));
    }
    // Unused and undefined tokens (and byte tokens of BPE vocabularies) print as nothing.
  }
}

}  // namespace sparrow
