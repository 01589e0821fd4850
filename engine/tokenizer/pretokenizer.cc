#include "engine/tokenizer/pretokenizer.h"

#include <initializer_list>
#include <span>

#include "engine/tokenizer/byte_encoding.h"
#include "engine/tokenizer/pretokenizer_rules.h"
#include "engine/tokenizer/unicode.h"

namespace sparrow::tokenizer {
namespace {

bool NameIn(std::string_view name, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) {
    if (name == n) return true;
  }
  return false;
}

std::span<const SplitRule> RulesOf(PreTokenizerKind kind) {
  using R = SplitRule;
  static constexpr R kGpt2[] = {R::kGpt2};
  static constexpr R kLlama3[] = {R::kLlama3};
  static constexpr R kDeepseekLlm[] = {R::kNewline,       R::kDeepseekLetters,
                                       R::kDeepseekPunct, R::kTrailingSpace,
                                       R::kCjk,           R::kNumberRun};
  static constexpr R kDeepseekCoder[] = {R::kNewline, R::kSpaceLetters, R::kSpacePunct, R::kCjk,
                                         R::kSingleNumber};
  static constexpr R kFalcon[] = {R::kPunctRunFalcon, R::kGpt2, R::kThreeDigits};
  static constexpr R kStarcoder[] = {R::kSingleNumber, R::kGpt2};
  static constexpr R kQwen2[] = {R::kQwen2};
  static constexpr R kBloom[] = {R::kBloom};
  static constexpr R kViking[] = {R::kBloom, R::kSingleNumber};
  static constexpr R kDefault[] = {R::kPunctRun, R::kGpt2, R::kNumberRun, R::kThreeDigits};
  switch (kind) {
    case PreTokenizerKind::kGpt2:
      return kGpt2;
    case PreTokenizerKind::kLlama3:
      return kLlama3;
    case PreTokenizerKind::kDeepseekLlm:
      return kDeepseekLlm;
    case PreTokenizerKind::kDeepseekCoder:
      return kDeepseekCoder;
    case PreTokenizerKind::kFalcon:
      return kFalcon;
    case PreTokenizerKind::kStarcoder:
      return kStarcoder;
    case PreTokenizerKind::kQwen2:
      return kQwen2;
    case PreTokenizerKind::kBloom:
      return kBloom;
    case PreTokenizerKind::kViking:
      return kViking;
    case PreTokenizerKind::kDefault:
      break;
  }
  return kDefault;
}

}  // namespace

Result<PreTokenizerConfig> LookupPreTokenizer(std::string_view name) {
  using K = PreTokenizerKind;
  PreTokenizerConfig c;
  if (name.empty() || name == "default") {
    c.kind = K::kDefault;
  } else if (NameIn(name, {"llama3", "llama-v3", "llama-bpe", "falcon3"})) {
    c.kind = K::kLlama3;
    c.ignore_merges = true;
    c.forces_add_bos = true;
  } else if (name == "deepseek-llm") {
    c.kind = K::kDeepseekLlm;
    c.clean_spaces = false;
  } else if (name == "deepseek-coder") {
    c.kind = K::kDeepseekCoder;
    c.clean_spaces = false;
  } else if (name == "falcon") {
    c.kind = K::kFalcon;
  } else if (NameIn(name,
                    {"mpt", "olmo", "jais", "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat",
                     "jina-v1-en", "jina-v2-es", "jina-v2-de", "jina-v2-code", "roberta-bpe"})) {
    c.kind = K::kGpt2;
  } else if (NameIn(name, {"starcoder", "refact", "codeshell", "exaone", "minerva-7b"})) {
    c.kind = K::kStarcoder;
  } else if (NameIn(name, {"command-r", "smollm"})) {
    c.kind = K::kStarcoder;
    c.clean_spaces = false;
  } else if (NameIn(name, {"qwen2", "deepseek-r1-qwen"})) {
    c.kind = K::kQwen2;
    c.clean_spaces = false;
  } else if (NameIn(name, {"stablelm2", "megrez"})) {
    c.kind = K::kQwen2;
  } else if (NameIn(name, {"dbrx", "smaug-bpe"})) {
    c.kind = K::kLlama3;
  } else if (name == "chatglm-bpe") {
    c.kind = K::kLlama3;
    c.clears_bos = true;
  } else if (name == "poro-chat") {
    c.kind = K::kBloom;
    c.clean_spaces = false;
  } else if (NameIn(name, {"bloom", "gpt3-finnish"})) {
    c.kind = K::kBloom;
  } else if (name == "viking") {
    c.kind = K::kViking;
    c.clean_spaces = false;
  } else {
    return Unsupported("tokenizer.ggml.pre: pre-tokenizer '" + std::string(name) +
                       "' is not supported");
  }
  return c;
}

std::vector<std::string> PreTokenize(std::string_view text, PreTokenizerKind kind) {
  const SplitText split(DecodeUtf8Lossy(text));
  std::vector<size_t> lengths = {split.cpts.size()};
  std::vector<size_t> next;
  for (SplitRule rule : RulesOf(kind)) {
    next.clear();
    size_t start = 0;
    for (size_t len : lengths) {
      ApplySplitRule(rule, split, start, start + len, &next);
      start += len;
    }
    lengths.swap(next);
  }

  std::vector<std::string> words;
  words.reserve(lengths.size());
  std::string utf8;
  size_t start = 0;
  for (size_t len : lengths) {
    utf8.clear();
    for (size_t i = start; i < start + len; ++i) AppendUtf8(split.cpts[i], &utf8);
    std::string word;
    AppendByteEncoded(utf8, &word);
    words.push_back(std::move(word));
    start += len;
  }
  return words;
}

}  // namespace sparrow::tokenizer
