// RerankFormat: a (query, document) pair as llama-server's format_prompt_rerank writes it, on
// stories260K's vocabulary: the template's own markers parsed as control tokens and the
// client's text never; the plain pair's BOS / EOS / SEP as the vocabulary adds them.
#include "server/core/rerank_format.h"

#include <gtest/gtest.h>

#include "tests/util/test_paths.h"

namespace sparrow::server {
namespace {

class RerankFormatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = testing::ModelPath("stories260K.gguf");
    if (!testing::FileExists(path)) GTEST_SKIP() << path << " is missing";
    auto f = GgufFile::Open(path);
    ASSERT_TRUE(f.ok());
    file_ = std::move(*f);
    auto t = LoadTokenizer(*file_);
    ASSERT_TRUE(t.ok());
    tok_ = std::move(*t);
  }
  std::vector<int32_t> Text(std::string_view s) const { return tok_->Tokenize(s, false, false); }
  std::unique_ptr<GgufFile> file_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(RerankFormatTest, TemplateMarkersAreControlTokensClientTextIsNot) {
  RerankFormat f;
  f.prompt_template = "{query}</s>{document}</s>";
  const std::vector<int32_t> got = f.Tokenize(*tok_, "a </s> b", "dog");
  // The client's "</s>" is text; the template's two are EOS; no BOS is added.
  std::vector<int32_t> want = Text("a </s> b");
  want.push_back(tok_->eos());
  const std::vector<int32_t> doc = Text("dog");
  want.insert(want.end(), doc.begin(), doc.end());
  want.push_back(tok_->eos());
  EXPECT_EQ(got, want);
  EXPECT_EQ(std::count(got.begin(), got.end(), tok_->eos()), 2);
}

TEST_F(RerankFormatTest, PlainPairAddsWhatTheVocabularyAdds) {
  const RerankFormat f = RerankFormat::FromFile(*file_);
  EXPECT_FALSE(f.prompt_template.has_value());
  EXPECT_FALSE(f.add_sep);  // SentencePiece: no SEP unless the file says
  // stories260K adds BOS and no EOS: [BOS] query document.
  std::vector<int32_t> want = {tok_->bos()};
  for (const char* s : {"a dog", "the sea"}) {
    const std::vector<int32_t> t = Text(s);
    want.insert(want.end(), t.begin(), t.end());
  }
  EXPECT_EQ(f.Tokenize(*tok_, "a dog", "the sea"), want);
  // With add_sep, the vocabulary's SEP after the query's EOS (stories260K names none: nothing).
  RerankFormat sep = f;
  sep.add_sep = true;
  const int32_t sep_id = tok_->special(SpecialToken::kSep);
  std::vector<int32_t> want_sep = want;
  if (sep_id != kNoToken) {
    want_sep.insert(want_sep.begin() + 1 + static_cast<long>(Text("a dog").size()), sep_id);
  }
  EXPECT_EQ(sep.Tokenize(*tok_, "a dog", "the sea"), want_sep);
}

}  // namespace
}  // namespace sparrow::server
