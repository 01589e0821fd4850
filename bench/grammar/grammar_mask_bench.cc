// grammar_mask_bench: what constrained decoding costs per token on a large vocabulary, and
// what compiling a schema costs. Random walks under the mask (as the unit test does) of a
// 40-property schema and of json_object; each step's AllowedTokens() and Mask() are timed,
// and cache misses (a state met for the first time) are reported apart from hits.
//
//   grammar_mask_bench VOCAB.gguf [--pad-to N] [--walks W] [--seed S]
//
// --pad-to extends the vocabulary to N tokens with pieces made of two of its own tokens (how
// BPE merges look), for the size of a vocabulary no file here has (Qwen3's 151,936).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/json_schema_grammar.h"
#include "engine/grammar/token_constraint.h"
#include "engine/model/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"

namespace sparrow::grammar {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

std::string FortyProperties() {
  std::string s = R"({"type": "object", "properties": {)";
  const char* kinds[] = {R"({"type": "string", "maxLength": 12})",
                         R"({"type": "integer", "minimum": 0, "maximum": 9999})",
                         R"({"type": "boolean"})", R"({"enum": ["red", "green", "blue"]})",
                         R"({"type": "array", "items": {"type": "number"}, "maxItems": 3})"};
  std::string required;
  for (int i = 0; i < 40; ++i) {
    if (i) s += ", ";
    s += "\"field_" + std::to_string(i) + "\": " + kinds[i % 5];
    if (i % 2 == 0)
      required += std::string(required.empty() ? "" : ", ") + "\"field_" + std::to_string(i) + "\"";
  }
  return s + "}, \"required\": [" + required + "], \"additionalProperties\": false}";
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

void Walk(const char* label, std::shared_ptr<const Grammar> grammar,
          std::shared_ptr<const TokenTrie> trie, int walks, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> miss, hit, apply;
  size_t tokens = 0, finished = 0;
  std::vector<float> logits(trie->vocab_size());
  for (int w = 0; w < walks; ++w) {
    auto c = TokenConstraint::Create(grammar, trie);
    if (!c.ok()) {
      std::fprintf(stderr, "%s\n", c.status().ToString().c_str());
      std::exit(1);
    }
    TokenConstraint& tc = **c;
    for (int step = 0; step < 400 && !tc.finished(); ++step) {
      const size_t computed_before = tc.masks_computed();
      const auto t0 = Clock::now();
      auto bits = tc.AllowedTokens();
      const auto t1 = Clock::now();
      if (!bits.ok()) {
        std::fprintf(stderr, "%s\n", bits.status().ToString().c_str());
        std::exit(1);
      }
      std::fill(logits.begin(), logits.end(), 0.0f);
      const auto t2 = Clock::now();
      if (!tc.Mask(logits).ok()) std::exit(1);
      apply.push_back(Ms(Clock::now() - t2));
      (tc.masks_computed() > computed_before ? miss : hit).push_back(Ms(t1 - t0));
      std::vector<TokenId> allowed;
      for (TokenId id = 0; id < trie->vocab_size(); ++id) {
        if (((**bits)[id >> 6] >> (id & 63)) & 1) allowed.push_back(id);
      }
      TokenId pick = allowed[rng() % allowed.size()];
      if (tc.CanEnd() && rng() % 2 == 0) pick = trie->eog_ids().front();
      if (!tc.Accept(pick).ok()) std::exit(1);
      ++tokens;
    }
    finished += tc.finished();
  }
  std::vector<double> all = miss;
  all.insert(all.end(), hit.begin(), hit.end());
  double total = 0;
  for (double x : all) total += x;
  std::printf(
      "%-12s %5zu tokens (%zu/%d walks ended)  mask per token: mean %.3f ms, median %.3f, "
      "p90 %.3f, max %.3f | walks of the trie %zu (median %.3f ms) | Mask() apply median %.3f ms\n",
      label, tokens, finished, walks, total / std::max<size_t>(1, all.size()), Percentile(all, 0.5),
      Percentile(all, 0.9), Percentile(all, 1.0), miss.size(), Percentile(miss, 0.5),
      Percentile(apply, 0.5));
}

int Main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s VOCAB.gguf [--pad-to N] [--walks W] [--seed S]\n", argv[0]);
    return 2;
  }
  int32_t pad_to = 0;
  int walks = 20;
  uint32_t seed = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--pad-to")) pad_to = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--walks")) walks = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--seed")) seed = static_cast<uint32_t>(std::atoi(argv[i + 1]));
  }
  auto file = GgufFile::Open(argv[1]);
  if (!file.ok()) {
    std::fprintf(stderr, "%s\n", file.status().ToString().c_str());
    return 1;
  }
  auto tok = LoadTokenizer(**file);
  if (!tok.ok()) {
    std::fprintf(stderr, "%s\n", tok.status().ToString().c_str());
    return 1;
  }
  const Tokenizer& t = **tok;
  std::vector<std::string> pieces(t.n_vocab());
  for (TokenId id = 0; id < t.n_vocab(); ++id) {
    if (!t.IsEog(id)) pieces[id] = std::string(t.piece(id, false));
  }
  std::mt19937 rng(seed);
  const size_t real = pieces.size();
  while (static_cast<int32_t>(pieces.size()) < pad_to) {
    std::string p = pieces[rng() % real] + pieces[rng() % real];
    if (p.size() > 24) p.resize(24);
    pieces.push_back(std::move(p));
  }
  const auto t0 = Clock::now();
  auto trie = std::make_shared<const TokenTrie>(TokenTrie::FromPieces(pieces, t.eog_ids()));
  std::printf("vocabulary %d tokens (%zu from %s), trie %zu nodes built in %.1f ms\n",
              trie->vocab_size(), real, argv[1], trie->nodes().size(), Ms(Clock::now() - t0));

  const std::string schema = FortyProperties();
  const auto c0 = Clock::now();
  auto grammar = CompileJsonSchema(schema);
  const double compile_ms = Ms(Clock::now() - c0);
  if (!grammar.ok()) {
    std::fprintf(stderr, "%s\n", grammar.status().ToString().c_str());
    return 1;
  }
  std::printf("40-property schema: compiled in %.2f ms (%zu rules, %zu symbols)\n", compile_ms,
              grammar->rule_count(), grammar->symbols().size());
  Walk("40-property", std::make_shared<const Grammar>(std::move(grammar).value()), trie, walks,
       seed);
  auto any = ParseGbnf(AnyJsonObjectGbnf());
  Walk("json_object", std::make_shared<const Grammar>(std::move(any).value()), trie, walks,
       seed + 1);
  return 0;
}

}  // namespace
}  // namespace sparrow::grammar

int main(int argc, char** argv) {
  return sparrow::grammar::Main(argc, argv);
}
