#include "engine/tokenizer/vocab.h"

#include <gtest/gtest.h>

#include "tests/unit/tokenizer/tiny_vocab.h"

namespace sparrow {
namespace {

using testing::BpeData;
using testing::SpmData;

bool HasWarningContaining(const Vocab& v, std::string_view text) {
  for (const std::string& w : v.warnings()) {
    if (w.find(text) != std::string::npos) return true;
  }
  return false;
}

void ExpectError(Result<Vocab> r, StatusCode code, std::string_view text) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_NE(r.status().message().find(text), std::string::npos) << r.status().ToString();
}

TEST(Vocab, SpmDefaults) {
  auto v =
      Vocab::Create(SpmData({{"\xE2\x96\x81"
                              "a",
                              -1.0f}}));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->type(), VocabType::kSpm);
  EXPECT_EQ(v->size(), 260);
  EXPECT_EQ(v->special(SpecialToken::kBos), 1);
  EXPECT_EQ(v->special(SpecialToken::kEos), 2);
  EXPECT_EQ(v->special(SpecialToken::kUnk), 0);
  EXPECT_EQ(v->special(SpecialToken::kEot), kNoToken);
  EXPECT_TRUE(v->add_bos());
  EXPECT_FALSE(v->add_eos());
  EXPECT_TRUE(v->add_space_prefix());
  EXPECT_FALSE(v->clean_spaces());
  EXPECT_EQ(v->eog_ids(), std::vector<TokenId>{2});
  EXPECT_EQ(v->Find("<0x0A>"), 3 + 10);
  EXPECT_EQ(v->ByteToken('\n'), 3 + 10);
  EXPECT_EQ(v->Find("nope"), kNoToken);
  EXPECT_EQ(v->EffectiveType(0), TokenType::kUnknown);
  EXPECT_EQ(v->EffectiveType(1), TokenType::kControl);
  EXPECT_EQ(v->EffectiveType(3), TokenType::kByte);
  EXPECT_EQ(v->EffectiveType(259), TokenType::kNormal);
  EXPECT_FLOAT_EQ(v->score(259), -1.0f);
  // Pieces with special=true: control tokens show their text, byte tokens their byte.
  EXPECT_EQ(v->piece_with_special(1), "<s>");
  EXPECT_EQ(v->piece_with_special(3 + 'A'), "A");
  EXPECT_EQ(v->piece_with_special(259), " a");
}

TEST(Vocab, SpecialTokensAreOrderedLongestFirst) {
  auto v = Vocab::Create(SpmData({}));
  ASSERT_TRUE(v.ok());
  // "<unk>" and "</s>" are longer than "<s>".
  EXPECT_EQ(v->special_tokens(), (std::vector<TokenId>{0, 2, 1}));
}

TEST(Vocab, BpeDefaultsAndMerges) {
  VocabData d = BpeData({"ab"}, {"a b", "nospace"});
  auto v = Vocab::Create(std::move(d));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->type(), VocabType::kBpe);
  EXPECT_FALSE(v->add_bos());
  EXPECT_FALSE(v->add_space_prefix());
  EXPECT_TRUE(v->clean_spaces());
  EXPECT_EQ(v->special(SpecialToken::kBos), 11);  // llama.cpp's default for gpt2 vocabularies
  EXPECT_EQ(v->special(SpecialToken::kEos), 11);
  EXPECT_EQ(v->BpeRank("a", "b"), 0);
  EXPECT_EQ(v->BpeRank("b", "a"), -1);
  EXPECT_TRUE(HasWarningContaining(*v, "no separator"));
  EXPECT_EQ(v->ByteToken(' '), ' ');
  EXPECT_EQ(v->piece_with_special(' '), " ");  // "Ġ" decodes to a space
}

TEST(Vocab, MismatchedArrayLengthsAreCorrupt) {
  VocabData scores = SpmData({});
  scores.scores.pop_back();
  ExpectError(Vocab::Create(std::move(scores)), StatusCode::kCorrupt, "tokenizer.ggml.scores");
  VocabData types = SpmData({});
  types.token_types.push_back(1);
  ExpectError(Vocab::Create(std::move(types)), StatusCode::kCorrupt, "tokenizer.ggml.token_type");
}

TEST(Vocab, MalformedTokensAreCorrupt) {
  VocabData empty;
  empty.model = "llama";
  ExpectError(Vocab::Create(std::move(empty)), StatusCode::kCorrupt, "empty");
  VocabData dup = SpmData({{"x", 0}, {"x", 0}});
  ExpectError(Vocab::Create(std::move(dup)), StatusCode::kCorrupt, "duplicates");
  VocabData bad_byte = SpmData({});
  bad_byte.tokens[3] = "<0xZZ>";
  ExpectError(Vocab::Create(std::move(bad_byte)), StatusCode::kCorrupt, "<0xNN>");
  VocabData no_merges = BpeData({}, {});
  no_merges.has_merges = false;
  ExpectError(Vocab::Create(std::move(no_merges)), StatusCode::kCorrupt, "merges");
}

// A WordPiece vocabulary: [PAD], 99 fillers, [UNK], [CLS], [SEP], [MASK] where BERT has them,
// then `words`.
VocabData WpmData(std::vector<std::string> words) {
  VocabData d;
  d.model = "bert";
  d.tokens.push_back("[PAD]");
  for (int i = 1; i < 100; ++i) d.tokens.push_back("[unused" + std::to_string(i) + "]");
  for (const char* s : {"[UNK]", "[CLS]", "[SEP]", "[MASK]"}) d.tokens.push_back(s);
  d.token_types.assign(d.tokens.size(), static_cast<int32_t>(TokenType::kNormal));
  for (int id : {0, 100, 101, 102, 103})
    d.token_types[id] = static_cast<int32_t>(TokenType::kControl);
  for (std::string& w : words) {
    d.tokens.push_back(std::move(w));
    d.token_types.push_back(static_cast<int32_t>(TokenType::kNormal));
  }
  return d;
}

TEST(Vocab, WpmDefaults) {
  auto v = Vocab::Create(WpmData({"\xE2\x96\x81hello", "##"}));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->type(), VocabType::kWpm);
  EXPECT_EQ(v->special(SpecialToken::kBos), 101);
  EXPECT_EQ(v->special(SpecialToken::kEos), kNoToken);
  EXPECT_EQ(v->special(SpecialToken::kUnk), 100);
  EXPECT_EQ(v->special(SpecialToken::kSep), 102);
  EXPECT_EQ(v->special(SpecialToken::kPad), 0);
  EXPECT_EQ(v->special(SpecialToken::kMask), 103);
  EXPECT_TRUE(v->add_bos());
  EXPECT_FALSE(v->add_eos());
  EXPECT_FALSE(v->add_space_prefix());
  EXPECT_TRUE(v->clean_spaces());
  EXPECT_TRUE(v->lowercase());
  EXPECT_TRUE(v->strip_accents());
  EXPECT_TRUE(v->eog_ids().empty());
  EXPECT_EQ(v->max_token_len(), 10);  // "[unused99]"
  EXPECT_EQ(v->piece_with_special(104), " hello");
}

TEST(Vocab, WpmNormalizerFollowsTheFile) {
  VocabData d = WpmData({});
  d.lowercase = false;
  auto v = Vocab::Create(std::move(d));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_FALSE(v->lowercase());
  EXPECT_FALSE(v->strip_accents());  // follows lowercase unless the file says
  VocabData e = WpmData({});
  e.strip_accents = false;
  auto w = Vocab::Create(std::move(e));
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(w->lowercase());
  EXPECT_FALSE(w->strip_accents());
}

TEST(Vocab, WpmWithoutClsOrSepIsCorrupt) {
  VocabData d = WpmData({});
  d.special_ids.emplace_back(SpecialToken::kSep, kNoSpecialId);
  ExpectError(Vocab::Create(std::move(d)), StatusCode::kCorrupt, "[SEP]");
  VocabData small;
  small.model = "bert";
  small.tokens = {"[PAD]", "a"};
  ExpectError(Vocab::Create(std::move(small)), StatusCode::kCorrupt, "[CLS]");
}

TEST(Vocab, UnsupportedModelsNameTheValue) {
  VocabData t5 = SpmData({});
  t5.model = "t5";
  ExpectError(Vocab::Create(std::move(t5)), StatusCode::kUnsupported, "'t5'");
  ExpectError(Vocab::Create(BpeData({}, {}, "made-up")), StatusCode::kUnsupported, "'made-up'");
}

TEST(Vocab, EmptyTokenTextGetsAPlaceholder) {
  auto v = Vocab::Create(SpmData({{"", 0}}));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->text(259), "[EMPTY_259]");
}

TEST(Vocab, OutOfRangeSpecialIdsAreIgnored) {
  VocabData d = SpmData({{"<end>", 0}});
  d.special_ids = {{SpecialToken::kBos, 0xFFFFFFFF},
                   {SpecialToken::kEos, 259},
                   {SpecialToken::kPad, -1},
                   {SpecialToken::kUnk, 100000}};
  auto v = Vocab::Create(std::move(d));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->special(SpecialToken::kBos), 1);  // default kept
  EXPECT_EQ(v->special(SpecialToken::kEos), 259);
  EXPECT_EQ(v->special(SpecialToken::kPad), kNoToken);
  EXPECT_EQ(v->special(SpecialToken::kUnk), 0);
  EXPECT_TRUE(v->IsEog(259));
  EXPECT_FALSE(v->IsEog(2));
  EXPECT_TRUE(HasWarningContaining(*v, "bos_token_id = 4294967295"));
}

TEST(Vocab, AddBosWithoutBosIsCorrupt) {
  // llama-bpe asks for BOS; the gpt2 default id 11 exists, so drop it via chatglm's rule instead.
  VocabData d = BpeData({}, {}, "chatglm-bpe");
  d.add_bos = true;
  ExpectError(Vocab::Create(std::move(d)), StatusCode::kCorrupt, "BOS");
  VocabData ok = BpeData({}, {}, "chatglm-bpe");
  ok.add_bos = true;
  ok.special_ids = {{SpecialToken::kBos, 5}};
  EXPECT_TRUE(Vocab::Create(std::move(ok)).ok());
}

TEST(Vocab, MetadataFlagsOverrideDefaults) {
  VocabData d = SpmData({});
  d.add_bos = false;
  d.add_eos = true;
  d.add_space_prefix = false;
  auto v = Vocab::Create(std::move(d));
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->add_bos());
  EXPECT_TRUE(v->add_eos());
  EXPECT_FALSE(v->add_space_prefix());
}

TEST(Vocab, EndOfGenerationTokensFoundByText) {
  VocabData d = BpeData(
      {"<|im_end|>", "<|endoftext|>", "<|fim_prefix|>", "<|fim_pad|>", "<|eom_id|>"}, {}, "qwen2");
  d.token_types.assign(d.tokens.size(), 1);
  d.token_types[256 + 1] = 3;  // <|endoftext|> already control
  auto v = Vocab::Create(std::move(d));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  // Either candidate may be chosen (llama.cpp's hash-map order); both end generation.
  EXPECT_TRUE(v->special(SpecialToken::kEot) == 256 || v->special(SpecialToken::kEot) == 257);
  EXPECT_EQ(v->special(SpecialToken::kEom), 260);
  EXPECT_EQ(v->special(SpecialToken::kFimPre), 258);
  EXPECT_EQ(v->special(SpecialToken::kFimPad), 259);
  for (TokenId id : {256, 257, 258, 259, 260}) {
    EXPECT_EQ(v->EffectiveType(id), TokenType::kControl) << id;
  }
  EXPECT_EQ(v->eog_ids(), (std::vector<TokenId>{11, 256, 257, 259, 260}));
  EXPECT_FALSE(v->IsEog(258));
  EXPECT_FALSE(v->IsEog(kNoToken));
  EXPECT_TRUE(HasWarningContaining(*v, "'<|im_end|>' was not control-type"));
  EXPECT_FALSE(HasWarningContaining(*v, "'<|endoftext|>' was not"));
}

TEST(Vocab, Phi3GetsRightStripOnSpecialTokens) {
  VocabData d = SpmData({{"<|end|>", 0}, {"<|user|>", 0}});
  d.name = "Phi3";
  d.token_types[259] = 3;
  d.token_types[260] = 4;
  auto v = Vocab::Create(std::move(d));
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->attr(259) & kAttrRStrip);
  EXPECT_TRUE(v->attr(260) & kAttrRStrip);
  EXPECT_TRUE(v->attr(2) & kAttrRStrip);   // </s>
  EXPECT_FALSE(v->attr(1) & kAttrRStrip);  // <s>
  EXPECT_FALSE(v->attr(0) & kAttrRStrip);  // <unk>
}

TEST(Vocab, SmallVocabularyDropsDefaultsThatDoNotFit) {
  VocabData d;
  d.model = "gpt2";
  d.pre = "gpt-2";
  d.tokens = {"a", "b"};
  d.has_merges = true;
  auto v = Vocab::Create(std::move(d));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->special(SpecialToken::kBos), kNoToken);
  EXPECT_TRUE(v->eog_ids().empty());
}

}  // namespace
}  // namespace sparrow
