#include "engine/tokenizer/vocab_gguf.h"

#include <algorithm>
#include <limits>

namespace sparrow {
namespace {

Result<std::vector<std::string>> ReadStringArray(const GgufFile& f, std::string_view key) {
  SPARROW_ASSIGN_OR_RETURN(const GgufArray* a, f.GetArray(key));
  if (a->elem_type != GgufValueType::kString) {
    return Corrupt("metadata key '" + std::string(key) +
                   "' should be an array of strings but holds " +
                   std::string(GgufValueTypeName(a->elem_type)));
  }
  return std::vector<std::string>(a->strings.begin(), a->strings.end());
}

Result<std::optional<bool>> ReadOptionalBool(const GgufFile& f, std::string_view key) {
  if (!f.Find(key)) return std::optional<bool>();
  SPARROW_ASSIGN_OR_RETURN(bool b, f.GetBool(key));
  return std::optional<bool>(b);
}

Result<std::string> ReadOptionalString(const GgufFile& f, std::string_view key) {
  if (!f.Find(key)) return std::string();
  SPARROW_ASSIGN_OR_RETURN(std::string_view s, f.GetString(key));
  return std::string(s);
}

struct SpecialKey {
  std::string_view key;
  SpecialToken kind;
};

// llama.cpp's reading order; the deprecated prefix/suffix/middle keys come last and win.
constexpr SpecialKey kSpecialKeys[] = {
    {"tokenizer.ggml.bos_token_id", SpecialToken::kBos},
    {"tokenizer.ggml.eos_token_id", SpecialToken::kEos},
    {"tokenizer.ggml.eot_token_id", SpecialToken::kEot},
    {"tokenizer.ggml.eom_token_id", SpecialToken::kEom},
    {"tokenizer.ggml.unknown_token_id", SpecialToken::kUnk},
    {"tokenizer.ggml.seperator_token_id", SpecialToken::kSep},
    {"tokenizer.ggml.padding_token_id", SpecialToken::kPad},
    {"tokenizer.ggml.mask_token_id", SpecialToken::kMask},
    {"tokenizer.ggml.fim_pre_token_id", SpecialToken::kFimPre},
    {"tokenizer.ggml.fim_suf_token_id", SpecialToken::kFimSuf},
    {"tokenizer.ggml.fim_mid_token_id", SpecialToken::kFimMid},
    {"tokenizer.ggml.fim_pad_token_id", SpecialToken::kFimPad},
    {"tokenizer.ggml.fim_rep_token_id", SpecialToken::kFimRep},
    {"tokenizer.ggml.fim_sep_token_id", SpecialToken::kFimSep},
    {"tokenizer.ggml.prefix_token_id", SpecialToken::kFimPre},
    {"tokenizer.ggml.suffix_token_id", SpecialToken::kFimSuf},
    {"tokenizer.ggml.middle_token_id", SpecialToken::kFimMid},
};

Result<VocabData> Read(const GgufFile& f) {
  VocabData d;
  if (!f.Find("tokenizer.ggml.model")) {
    return NotFound("no tokenizer in the file (metadata key 'tokenizer.ggml.model' is missing)");
  }
  SPARROW_ASSIGN_OR_RETURN(std::string_view model, f.GetString("tokenizer.ggml.model"));
  d.model = std::string(model);
  SPARROW_ASSIGN_OR_RETURN(d.pre, ReadOptionalString(f, "tokenizer.ggml.pre"));
  SPARROW_ASSIGN_OR_RETURN(d.name, ReadOptionalString(f, "general.name"));

  if (!f.Find("tokenizer.ggml.tokens")) {
    return Corrupt("metadata key 'tokenizer.ggml.tokens' is missing");
  }
  SPARROW_ASSIGN_OR_RETURN(d.tokens, ReadStringArray(f, "tokenizer.ggml.tokens"));
  if (f.Find("tokenizer.ggml.scores")) {
    SPARROW_ASSIGN_OR_RETURN(const GgufArray* a, f.GetArray("tokenizer.ggml.scores"));
    SPARROW_ASSIGN_OR_RETURN(d.scores, GgufFile::ArrayAsFloats(*a, "tokenizer.ggml.scores"));
  }
  if (f.Find("tokenizer.ggml.token_type")) {
    SPARROW_ASSIGN_OR_RETURN(const GgufArray* a, f.GetArray("tokenizer.ggml.token_type"));
    SPARROW_ASSIGN_OR_RETURN(std::vector<int64_t> types,
                             GgufFile::ArrayAsInts(*a, "tokenizer.ggml.token_type"));
    d.token_types.reserve(types.size());
    for (int64_t t : types) {
      const bool fits =
          t >= std::numeric_limits<int32_t>::min() && t <= std::numeric_limits<int32_t>::max();
      d.token_types.push_back(fits ? static_cast<int32_t>(t) : -1);  // -1: undefined type
    }
  }
  if (f.Find("tokenizer.ggml.merges")) {
    d.has_merges = true;
    SPARROW_ASSIGN_OR_RETURN(d.merges, ReadStringArray(f, "tokenizer.ggml.merges"));
  }
  for (const SpecialKey& k : kSpecialKeys) {
    const GgufValue* v = f.Find(k.key);
    if (!v) continue;
    if (!v->IsInteger()) {
      return Corrupt("metadata key '" + std::string(k.key) + "' should be an integer but holds " +
                     std::string(GgufValueTypeName(v->type)));
    }
    // Converters write "this model has no such token" as -1, which an unsigned key holds as
    // its largest value (0xFFFFFFFF in a u32); any other id outside the vocabulary is ignored
    // later, with a warning.
    int64_t id = kNoSpecialId;
    if (const int64_t* i = std::get_if<int64_t>(&v->v)) id = *i;
    if (const uint64_t* u = std::get_if<uint64_t>(&v->v)) {
      const bool minus_one = (v->type == GgufValueType::kU32 && *u == 0xFFFFFFFFu) ||
                             *u == std::numeric_limits<uint64_t>::max();
      if (!minus_one) {
        id = static_cast<int64_t>(
            std::min<uint64_t>(*u, static_cast<uint64_t>(std::numeric_limits<int64_t>::max())));
      }
    }
    d.special_ids.emplace_back(k.kind, id);
  }
  SPARROW_ASSIGN_OR_RETURN(d.add_bos, ReadOptionalBool(f, "tokenizer.ggml.add_bos_token"));
  SPARROW_ASSIGN_OR_RETURN(d.add_eos, ReadOptionalBool(f, "tokenizer.ggml.add_eos_token"));
  SPARROW_ASSIGN_OR_RETURN(d.add_space_prefix,
                           ReadOptionalBool(f, "tokenizer.ggml.add_space_prefix"));
  SPARROW_ASSIGN_OR_RETURN(d.lowercase, ReadOptionalBool(f, "tokenizer.ggml.normalizer.lowercase"));
  SPARROW_ASSIGN_OR_RETURN(d.strip_accents,
                           ReadOptionalBool(f, "tokenizer.ggml.normalizer.strip_accents"));
  return d;
}

}  // namespace

Result<VocabData> ReadVocabData(const GgufFile& file) {
  Result<VocabData> r = Read(file);
  if (!r.ok()) return r.status().WithContext(file.path());
  return r;
}

}  // namespace sparrow
