// The special-token half of Vocab: ids from metadata, ids found by token text, the
// end-of-generation set, and per-model attribute fixes, in llama.cpp's order.
#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <span>
#include <string>
#include <unordered_map>

#include "engine/tokenizer/vocab.h"

namespace sparrow {
namespace {

bool TextIn(std::string_view text, std::span<const std::string_view> set) {
  return std::find(set.begin(), set.end(), text) != set.end();
}

// Texts that name an end-of-turn token in the chat vocabularies llama.cpp knows.
constexpr std::string_view kEotTexts[] = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<EOT>",
    "<\xEF\xBD\x9C"
    "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",  // DeepSeek
};
constexpr std::string_view kEomTexts[] = {"<|eom_id|>"};
constexpr std::string_view kFimPreTexts[] = {"<|fim_prefix|>", "<fim-prefix>",
                                             "<\xEF\xBD\x9C"
                                             "fim\xE2\x96\x81"
                                             "begin\xEF\xBD\x9C>",
                                             "<PRE>"};
constexpr std::string_view kFimSufTexts[] = {"<|fim_suffix|>", "<fim-suffix>",
                                             "<\xEF\xBD\x9C"
                                             "fim\xE2\x96\x81"
                                             "hole\xEF\xBD\x9C>",
                                             "<SUF>"};
constexpr std::string_view kFimMidTexts[] = {"<|fim_middle|>", "<fim-middle>",
                                             "<\xEF\xBD\x9C"
                                             "fim\xE2\x96\x81"
                                             "end\xEF\xBD\x9C>",
                                             "<MID>"};
constexpr std::string_view kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<PAD>"};
constexpr std::string_view kFimRepTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
                                             "<REPO>"};
constexpr std::string_view kFimSepTexts[] = {"<|file_sep|>"};
// Texts of tokens that end generation whatever role they have.
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<EOT>",
};

struct TextRule {
  SpecialToken kind;
  std::span<const std::string_view> texts;
};

constexpr TextRule kTextRules[] = {
    {SpecialToken::kEot, kEotTexts},       {SpecialToken::kEom, kEomTexts},
    {SpecialToken::kFimPre, kFimPreTexts}, {SpecialToken::kFimSuf, kFimSufTexts},
    {SpecialToken::kFimMid, kFimMidTexts}, {SpecialToken::kFimPad, kFimPadTexts},
    {SpecialToken::kFimRep, kFimRepTexts}, {SpecialToken::kFimSep, kFimSepTexts},
};

}  // namespace

Status Vocab::InitSpecials(const VocabData& data, const tokenizer::PreTokenizerConfig& pre) {
  auto set = [&](SpecialToken s, TokenId id) { special_[static_cast<size_t>(s)] = id; };
  if (type_ == VocabType::kSpm) {
    set(SpecialToken::kBos, 1);
    set(SpecialToken::kEos, 2);
    set(SpecialToken::kUnk, 0);
  } else if (type_ == VocabType::kWpm) {  // BERT's [CLS], [UNK], [SEP], [PAD], [MASK]
    set(SpecialToken::kBos, 101);
    set(SpecialToken::kUnk, 100);
    set(SpecialToken::kSep, 102);
    set(SpecialToken::kPad, 0);
    set(SpecialToken::kMask, 103);
  } else {
    set(SpecialToken::kBos, pre.clears_bos ? kNoToken : 11);
    set(SpecialToken::kEos, 11);
  }
  // Defaults that do not fit a small vocabulary mean "none".
  for (TokenId& id : special_) {
    if (id != kNoToken && !Contains(id)) id = kNoToken;
  }

  for (const auto& [kind, value] : data.special_ids) {
    if (kind == SpecialToken::kCount) continue;
    if (value == kNoSpecialId) {
      set(kind, kNoToken);
      continue;
    }
    if (value < 0 || value >= size()) {
      warnings_.push_back("bad special token: tokenizer.ggml." +
                          std::string(SpecialTokenName(kind)) +
                          "_token_id = " + std::to_string(value) +
                          " is outside the vocabulary of " + std::to_string(size()) + "; ignored");
      continue;
    }
    set(kind, static_cast<TokenId>(value));
  }
  // A file that says it has no BOS (or EOS) and is silent about adding one adds none.
  if (data.add_bos) {
    add_bos_ = *data.add_bos;
  } else if (special(SpecialToken::kBos) == kNoToken) {
    add_bos_ = false;
  }
  if (data.add_eos) {
    add_eos_ = *data.add_eos;
  } else if (special(SpecialToken::kEos) == kNoToken) {
    add_eos_ = false;
  }

  DetectSpecialsByText();
  BuildEogSet();

  if (add_bos_ && special(SpecialToken::kBos) == kNoToken) {
    return Corrupt("the vocabulary asks for a BOS token (add_bos_token) but has none");
  }
  if (add_eos_ && special(SpecialToken::kEos) == kNoToken) {
    return Corrupt("the vocabulary asks for an EOS token (add_eos_token) but has none");
  }
  // With special tokens, WordPiece frames every text as [CLS] ... [SEP] whatever
  // add_bos_token and add_eos_token say (llama.cpp), and writes unknown words as [UNK].
  if (type_ == VocabType::kWpm && special(SpecialToken::kBos) == kNoToken) {
    return Corrupt("a 'bert' vocabulary needs a BOS ([CLS]) token and has none");
  }
  if (type_ == VocabType::kWpm && special(SpecialToken::kSep) == kNoToken) {
    return Corrupt("a 'bert' vocabulary needs a separator ([SEP]) token and has none");
  }
  if (type_ == VocabType::kWpm && special(SpecialToken::kUnk) == kNoToken) {
    return Corrupt("a 'bert' vocabulary needs an unknown ([UNK]) token and has none");
  }

  for (TokenId id = 0; id < size(); ++id) {
    if (attr_[id] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) special_tokens_.push_back(id);
  }
  std::stable_sort(special_tokens_.begin(), special_tokens_.end(),
                   [&](TokenId a, TokenId b) { return text_[a].size() > text_[b].size(); });
  return Status::Ok();
}

void Vocab::DetectSpecialsByText() {
  auto force_control = [&](TokenId id) {
    if (attr_[id] & kAttrControl) return;
    warnings_.push_back("control-looking token " + std::to_string(id) + " '" + text_[id] +
                        "' was not control-type; treating it as control");
    attr_[id] = kAttrControl;
  };
  // When a vocabulary holds several candidates for one role (Phi-3 has both <|end|> and
  // <|endoftext|>), llama.cpp takes the first one its std::unordered_map<std::string, id> yields.
  // Building the same map the same way reproduces that choice with the same standard library
  // (std::hash of a string_view equals that of the string, so the order is the same).
  std::unordered_map<std::string_view, TokenId> by_text;
  for (TokenId id = 0; id < size(); ++id) by_text[text_[id]] = id;
  for (const auto& [text, id] : by_text) {
    for (const TextRule& rule : kTextRules) {
      TokenId& slot = special_[static_cast<size_t>(rule.kind)];
      if (slot == kNoToken && TextIn(text, rule.texts)) {
        slot = id;
        force_control(id);
      }
    }
  }
  for (TokenId id = 0; id < size(); ++id) {
    if (TextIn(text_[id], kEogTexts)) {
      eog_.push_back(id);
      force_control(id);
    }
  }
}

void Vocab::BuildEogSet() {
  for (SpecialToken s : {SpecialToken::kFimPad, SpecialToken::kFimRep, SpecialToken::kFimSep,
                         SpecialToken::kEos, SpecialToken::kEot, SpecialToken::kEom}) {
    if (special(s) != kNoToken) eog_.push_back(special(s));
  }
  std::sort(eog_.begin(), eog_.end());
  eog_.erase(std::unique(eog_.begin(), eog_.end()), eog_.end());
}

void Vocab::ApplyNameFixes(const VocabData& data) {
  auto set_attr = [&](std::string_view text, uint32_t bit, bool on) {
    const TokenId id = Find(text);
    if (id == kNoToken) return;
    attr_[id] = on ? (attr_[id] | bit) : (attr_[id] & ~bit);
  };
  std::string name = data.name;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto contains_any = [](std::string_view s, std::initializer_list<std::string_view> subs) {
    for (std::string_view sub : subs) {
      if (s.find(sub) != std::string_view::npos) return true;
    }
    return false;
  };
  if (contains_any(data.pre, {"jina-v2-de", "jina-v2-es", "jina-v2-code"})) {
    set_attr("<mask>", kAttrLStrip, true);
  } else if (contains_any(name, {"phi-3", "phi3"})) {
    for (TokenId id : special_tokens_) attr_[id] |= kAttrRStrip;
    set_attr("</s>", kAttrRStrip, true);
    for (std::string_view t : {"<unk>", "<s>", "<|endoftext|>"}) set_attr(t, kAttrRStrip, false);
  }
}

}  // namespace sparrow
