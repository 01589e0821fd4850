#pragma once
// Pre-tokenization of byte-level BPE vocabularies: splits text into words with the regex set
// that `tokenizer.ggml.pre` names, exactly as llama.cpp (c392e509) splits it, then writes each
// word in the GPT-2 byte alphabet. Stateless; thread-safe.
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/result.h"

namespace sparrow::tokenizer {

// One entry per distinct regex set.
enum class PreTokenizerKind {
  kDefault,  // llama.cpp's fallback set (also used when the key is missing)
  kGpt2,     // gpt-2, mpt, olmo, jais, phi-2, roberta-bpe, jina-*
  kLlama3,   // llama3 / llama-bpe, dbrx, smaug-bpe, chatglm-bpe
  kDeepseekLlm,
  kDeepseekCoder,
  kFalcon,
  kStarcoder,  // starcoder, refact, command-r, smollm, codeshell, exaone, minerva-7b
  kQwen2,      // qwen2, deepseek-r1-qwen, stablelm2, megrez
  kBloom,      // bloom, poro-chat, gpt3-finnish
  kViking,
};

// What a `tokenizer.ggml.pre` value selects, including the vocabulary flags llama.cpp ties to it.
struct PreTokenizerConfig {
  PreTokenizerKind kind = PreTokenizerKind::kDefault;
  bool ignore_merges = false;   // a word that is already a token is not merged
  bool forces_add_bos = false;  // default add_bos becomes true (metadata may still override)
  bool clean_spaces = true;     // detokenizer removes spaces before punctuation
  bool clears_bos = false;      // default BOS becomes "none" (chatglm-bpe)
};

// Unknown names are Unsupported, naming the value. "" means the key was absent.
Result<PreTokenizerConfig> LookupPreTokenizer(std::string_view name);

// Splits `text` and returns the words in the GPT-2 byte alphabet. Invalid UTF-8 is read as U+FFFD.
std::vector<std::string> PreTokenize(std::string_view text, PreTokenizerKind kind);

}  // namespace sparrow::tokenizer
