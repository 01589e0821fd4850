#include "engine/tokenizer/vocab_gguf.h"

#include <gtest/gtest.h>

#include "engine/tokenizer/tokenizer.h"
#include "tests/unit/tokenizer/mini_gguf.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using testing::MiniGguf;

// A valid three-token SPM vocabulary; tests add or break one key.
MiniGguf BaseSpm() {
  MiniGguf g;
  g.String("general.name", "tiny")
      .String("tokenizer.ggml.model", "llama")
      .Strings("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>",
                                         "\xE2\x96\x81"
                                         "a"})
      .F32s("tokenizer.ggml.scores", {0, 0, 0, -1})
      .I32s("tokenizer.ggml.token_type", {2, 3, 3, 1});
  return g;
}

struct Loaded {
  std::vector<uint8_t> bytes;  // must outlive the file
  Result<std::unique_ptr<Tokenizer>> tokenizer = Internal("not loaded");
};

std::unique_ptr<Loaded> Load(const MiniGguf& g) {
  auto l = std::make_unique<Loaded>();
  l->bytes = g.Build();
  auto file = GgufFile::FromMemory(l->bytes, "mem.gguf");
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (file.ok()) l->tokenizer = LoadTokenizer(**file);
  return l;
}

void ExpectError(const MiniGguf& g, StatusCode code, std::string_view text) {
  auto l = Load(g);
  ASSERT_FALSE(l->tokenizer.ok());
  EXPECT_EQ(l->tokenizer.status().code(), code) << l->tokenizer.status().ToString();
  EXPECT_NE(l->tokenizer.status().message().find(text), std::string::npos)
      << l->tokenizer.status().ToString();
  EXPECT_NE(l->tokenizer.status().message().find("mem.gguf"), std::string::npos);
}

TEST(VocabGguf, ReadsTheRealModel) {
  const std::string path = testing::ModelPath("stories260K.gguf");
  if (!testing::FileExists(path)) GTEST_SKIP();
  auto file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto d = ReadVocabData(**file);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->model, "llama");
  EXPECT_EQ(d->tokens.size(), 512u);
  EXPECT_EQ(d->scores.size(), 512u);
  EXPECT_EQ(d->token_types.size(), 512u);
  EXPECT_EQ(d->tokens[3], "<0x00>");
  EXPECT_FALSE(d->add_bos.has_value());
  // unk, bos, eos, and separator/padding stored as 0xFFFFFFFF: "none", read without a warning.
  ASSERT_EQ(d->special_ids.size(), 5u);
  EXPECT_EQ(d->special_ids[3], std::make_pair(SpecialToken::kSep, kNoSpecialId));
  auto tok = LoadTokenizer(**file);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->special(SpecialToken::kSep), kNoToken);
  EXPECT_EQ((*tok)->pad(), kNoToken);
  EXPECT_TRUE((*tok)->warnings().empty()) << (*tok)->warnings()[0];
}

TEST(VocabGguf, MinimalFileLoads) {
  auto l = Load(
      BaseSpm().U32("tokenizer.ggml.eos_token_id", 3).Bool("tokenizer.ggml.add_bos_token", false));
  ASSERT_TRUE(l->tokenizer.ok()) << l->tokenizer.status().ToString();
  const Tokenizer& t = **l->tokenizer;
  EXPECT_EQ(t.n_vocab(), 4);
  EXPECT_EQ(t.eos(), 3);
  EXPECT_FALSE(t.add_bos());
  EXPECT_EQ(t.Tokenize("a", true), std::vector<TokenId>{3});
}

TEST(VocabGguf, BadSpecialIdIsIgnoredLikeLlamaCpp) {
  auto l = Load(BaseSpm().U32("tokenizer.ggml.bos_token_id", 7));
  ASSERT_TRUE(l->tokenizer.ok()) << l->tokenizer.status().ToString();
  EXPECT_EQ((*l->tokenizer)->bos(), 1);
  ASSERT_EQ((*l->tokenizer)->warnings().size(), 1u);
  EXPECT_NE((*l->tokenizer)->warnings()[0].find("bos_token_id = 7"), std::string::npos);
}

// Converters write "no such token" as -1: 0xFFFFFFFF in a u32 key, -1 in an i32 one.
TEST(VocabGguf, MinusOneIdMeansNoSuchTokenSilently) {
  auto l = Load(BaseSpm()
                    .U32("tokenizer.ggml.seperator_token_id", 0xFFFFFFFF)
                    .I32("tokenizer.ggml.padding_token_id", -1)
                    .U32("tokenizer.ggml.unknown_token_id", 0xFFFFFFFF)
                    .U32("tokenizer.ggml.bos_token_id", 0xFFFFFFFF));
  ASSERT_TRUE(l->tokenizer.ok()) << l->tokenizer.status().ToString();
  const Tokenizer& t = **l->tokenizer;
  EXPECT_TRUE(t.warnings().empty()) << t.warnings()[0];
  EXPECT_EQ(t.special(SpecialToken::kSep), kNoToken);
  EXPECT_EQ(t.pad(), kNoToken);
  EXPECT_EQ(t.special(SpecialToken::kUnk), kNoToken);
  // No BOS and no add_bos_token key: nothing is put before the prompt.
  EXPECT_EQ(t.bos(), kNoToken);
  EXPECT_FALSE(t.add_bos());
  EXPECT_EQ(t.Tokenize("a", true), std::vector<TokenId>{3});
  EXPECT_EQ(t.eos(), 2);
}

TEST(VocabGguf, MissingTokenizerIsNotFound) {
  MiniGguf g;
  g.String("general.name", "weights only");
  ExpectError(g, StatusCode::kNotFound, "tokenizer.ggml.model");
}

TEST(VocabGguf, MalformedMetadataIsCorrupt) {
  {
    MiniGguf g;
    g.String("tokenizer.ggml.model", "llama");
    ExpectError(g, StatusCode::kCorrupt, "tokenizer.ggml.tokens");
  }
  {
    MiniGguf g;
    g.String("tokenizer.ggml.model", "llama").I32s("tokenizer.ggml.tokens", {1, 2});
    ExpectError(g, StatusCode::kCorrupt, "tokenizer.ggml.tokens");
  }
  ExpectError(BaseSpm()
                  .I32("tokenizer.ggml.model_x", 0)
                  .Strings("tokenizer.ggml.merges", {"a b"})
                  .String("tokenizer.ggml.bos_token_id", "1"),
              StatusCode::kCorrupt, "tokenizer.ggml.bos_token_id");
  {
    MiniGguf g;
    g.String("tokenizer.ggml.model", "llama")
        .Strings("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>"})
        .Strings("tokenizer.ggml.scores", {"x", "y", "z"});
    ExpectError(g, StatusCode::kCorrupt, "tokenizer.ggml.scores");
  }
  {
    MiniGguf g;
    g.String("tokenizer.ggml.model", "llama")
        .Strings("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>"})
        .F32s("tokenizer.ggml.scores", {0, 0});
    ExpectError(g, StatusCode::kCorrupt, "tokenizer.ggml.scores");
  }
  {
    MiniGguf g;
    g.String("tokenizer.ggml.model", "llama")
        .Strings("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>"})
        .I32s("tokenizer.ggml.token_type", {2, 3, 3, 1});
    ExpectError(g, StatusCode::kCorrupt, "tokenizer.ggml.token_type");
  }
  ExpectError(BaseSpm().I32("tokenizer.ggml.add_bos_token", 1), StatusCode::kCorrupt,
              "tokenizer.ggml.add_bos_token");
  {
    MiniGguf g;
    g.String("tokenizer.ggml.model", "gpt2")
        .String("tokenizer.ggml.pre", "gpt-2")
        .Strings("tokenizer.ggml.tokens", {"a", "b"});
    ExpectError(g, StatusCode::kCorrupt, "merges");
  }
}

TEST(VocabGguf, UnsupportedModel) {
  MiniGguf g;
  g.String("tokenizer.ggml.model", "t5").Strings("tokenizer.ggml.tokens", {"a"});
  ExpectError(g, StatusCode::kUnsupported, "'t5'");
}

}  // namespace
}  // namespace sparrow
