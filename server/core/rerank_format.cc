#include "server/core/rerank_format.h"

namespace sparrow::server {
namespace {

// llama.cpp's add_sep before the file's key: on for WPM (BERT) vocabularies and the BPE
// pre-tokenizers of RoBERTa-style cross-encoders.
bool DefaultAddSep(const GgufFile& f) {
  auto model = f.GetString("tokenizer.ggml.model");
  if (model.ok() && *model == "bert") return true;
  auto pre = f.GetString("tokenizer.ggml.pre");
  return pre.ok() && (*pre == "jina-v1-en" || *pre == "jina-v2-code" || *pre == "roberta-bpe");
}

}  // namespace

RerankFormat RerankFormat::FromFile(const GgufFile& f) {
  RerankFormat r;
  if (auto t = f.GetString("tokenizer.chat_template.rerank"); t.ok()) {
    r.prompt_template = std::string(*t);
  }
  auto add_sep = f.GetBoolOr("tokenizer.ggml.add_sep_token", DefaultAddSep(f));
  r.add_sep = add_sep.ok() && *add_sep;
  return r;
}

std::vector<int32_t> RerankFormat::Tokenize(const Tokenizer& tok, std::string_view query,
                                            std::string_view document) const {
  if (prompt_template) {
    // Each placeholder of the template replaced once, the client's text marked literal.
    std::string text;
    std::vector<tokenizer::TextRange> literal;
    const std::string_view t = *prompt_template;
    size_t i = 0;
    while (i < t.size()) {
      const size_t q = t.find("{query}", i), d = t.find("{document}", i);
      const size_t at = std::min(q, d);
      if (at == std::string_view::npos) break;
      text.append(t.substr(i, at - i));
      const std::string_view value = at == q ? query : document;
      literal.push_back({text.size(), value.size()});
      text.append(value);
      i = at + (at == q ? 7 : 10);  // the placeholder's length
    }
    text.append(t.substr(std::min(i, t.size())));
    return tok.TokenizeTemplated(text, /*add_special=*/false, literal);
  }
  const TokenId eos = tok.eos() != kNoToken ? tok.eos() : tok.special(SpecialToken::kSep);
  const TokenId sep = tok.special(SpecialToken::kSep);
  std::vector<int32_t> out;
  if (tok.add_bos() && tok.bos() != kNoToken) out.push_back(tok.bos());
  const std::vector<TokenId> q = tok.Tokenize(query, /*add_special=*/false);
  out.insert(out.end(), q.begin(), q.end());
  if (tok.add_eos() && eos != kNoToken) out.push_back(eos);
  if (add_sep && sep != kNoToken) out.push_back(sep);
  const std::vector<TokenId> d = tok.Tokenize(document, /*add_special=*/false);
  out.insert(out.end(), d.begin(), d.end());
  if (tok.add_eos() && eos != kNoToken) out.push_back(eos);
  return out;
}

}  // namespace sparrow::server
