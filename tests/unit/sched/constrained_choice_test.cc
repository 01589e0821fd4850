// ChooseToken with an OutputConstraint, through a real Scheduler on stories260K at temperature 1
// (where only the constraint makes the output parse): every choice of a group parses, ends with
// kStop once the grammar is whole, the logprobs are of the constrained distribution, logit_bias
// cannot push a refused token through, and a free sequence batched beside a constrained one
// decodes as it does alone.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/json_schema_grammar.h"
#include "engine/grammar/token_constraint.h"
#include "engine/kernels/thread_pool.h"
#include "engine/sched/scheduler.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/util/collecting_sink.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using testing::CollectingSink;

class ConstrainedChoiceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto m = Model::Load(testing::ModelPath("stories260K.gguf"));
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value().release();
    auto t = LoadTokenizer(model_->file());
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    tok_ = std::move(t).value().release();
    trie_ = new std::shared_ptr<const grammar::TokenTrie>(
        std::make_shared<const grammar::TokenTrie>(grammar::TokenTrie::FromTokenizer(*tok_)));
  }

  void SetUp() override {
    SchedulerOptions o;
    o.n_ctx = 256;
    o.is_eog = [](int32_t id) { return tok_->IsEog(id); };
    sched_ = std::make_unique<Scheduler>(*model_, &pool_, o);
  }

  static std::shared_ptr<OutputConstraint> Constraint(std::shared_ptr<const grammar::Grammar> g) {
    auto c = grammar::TokenConstraint::Create(std::move(g), *trie_);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::shared_ptr<OutputConstraint>(std::move(c).value()) : nullptr;
  }

  static std::shared_ptr<const grammar::Grammar> Gbnf(const std::string& text) {
    auto g = grammar::ParseGbnf(text);
    EXPECT_TRUE(g.ok()) << g.status().ToString();
    return std::make_shared<const grammar::Grammar>(std::move(g).value());
  }

  GenerationRequest Request(int64_t max_tokens, uint64_t seed) {
    GenerationRequest r;
    r.prompt = tok_->Tokenize("Once upon a time", true);
    r.sampling.temperature = 1.0f;
    r.sampling.top_k = 0;
    r.sampling.top_p = 1.0f;
    r.sampling.min_p = 0.0f;
    r.sampling.seed = seed;
    r.max_tokens = max_tokens;
    r.sink = std::make_shared<CollectingSink>();
    return r;
  }

  static std::string Text(const std::vector<int32_t>& ids) {
    std::string out;
    for (int32_t id : ids) out += tok_->piece(id);
    return out;
  }

  kernels::ThreadPool pool_{1};
  std::unique_ptr<Scheduler> sched_;
  static Model* model_;
  static Tokenizer* tok_;
  static std::shared_ptr<const grammar::TokenTrie>* trie_;
};

Model* ConstrainedChoiceTest::model_ = nullptr;
Tokenizer* ConstrainedChoiceTest::tok_ = nullptr;
std::shared_ptr<const grammar::TokenTrie>* ConstrainedChoiceTest::trie_ = nullptr;

TEST_F(ConstrainedChoiceTest, EveryChoiceOfAGroupValidatesAndStops) {
  auto schema = grammar::CompileJsonSchema(R"({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 8}, "age": {"type": "integer", "minimum": 0,
      "maximum": 120}, "ok": {"type": "boolean"}}, "required": ["name", "age", "ok"]})");
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  auto g = std::make_shared<const grammar::Grammar>(std::move(schema).value());
  std::vector<GenerationRequest> group;
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  for (int i = 0; i < 4; ++i) {
    GenerationRequest r = Request(200, 7 + i);
    r.constraint = Constraint(g);  // each choice its own matcher, the grammar shared
    sinks.push_back(std::static_pointer_cast<CollectingSink>(r.sink));
    group.push_back(std::move(r));
  }
  ASSERT_TRUE(sched_->SubmitGroup(std::move(group)).ok());
  int stopped = 0;
  for (auto& sink : sinks) {
    const FinishInfo info = sink->WaitInfo();
    ASSERT_NE(info.reason, FinishReason::kError) << info.status.ToString();
    if (info.reason != FinishReason::kStop) continue;
    ++stopped;
    const std::string text = Text(sink->Wait());
    const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(doc.is_object()) << text;
    EXPECT_TRUE(doc["name"].is_string()) << text;
    EXPECT_LE(doc["name"].get<std::string>().size(), 8u) << text;
    ASSERT_TRUE(doc["age"].is_number_integer()) << text;
    EXPECT_GE(doc["age"].get<int>(), 0) << text;
    EXPECT_LE(doc["age"].get<int>(), 120) << text;
    EXPECT_TRUE(doc["ok"].is_boolean()) << text;
  }
  EXPECT_GT(stopped, 0);
}

TEST_F(ConstrainedChoiceTest, LogprobsAreOfTheConstrainedDistribution) {
  // Three allowed continuations at the first step, then the end: their probabilities sum to 1.
  GenerationRequest r = Request(8, 3);
  r.constraint = Constraint(Gbnf(R"(root ::= ("a" | "b" | "c") "!")"));
  r.logprobs = true;
  r.top_logprobs = 5;
  auto sink = std::static_pointer_cast<CollectingSink>(r.sink);
  ASSERT_TRUE(sched_->Submit(std::move(r)).ok());
  const std::vector<TokenEvent> events = sink->WaitEvents();
  const FinishInfo info = sink->WaitInfo();
  EXPECT_EQ(info.reason, FinishReason::kStop);
  ASSERT_FALSE(events.empty());
  double total = 0;
  for (const auto& [id, lp] : events[0].top_logprobs) {
    if (!std::isfinite(lp)) continue;
    total += std::exp(lp);
    const std::string piece(tok_->piece(id));
    EXPECT_TRUE(piece == "a" || piece == "b" || piece == "c") << piece;
  }
  EXPECT_NEAR(total, 1.0, 1e-3);
  const std::string text = Text(sink->Wait());
  EXPECT_TRUE(text == "a!" || text == "b!" || text == "c!") << text;
}

TEST_F(ConstrainedChoiceTest, LogitBiasCannotPushARefusedTokenThrough) {
  const int32_t banned = tok_->FindToken("x");
  ASSERT_GE(banned, 0);
  GenerationRequest r = Request(8, 5);
  r.constraint = Constraint(Gbnf(R"(root ::= [a-c]{3})"));
  r.logit_bias = {{banned, 100.0f}};
  auto sink = std::static_pointer_cast<CollectingSink>(r.sink);
  ASSERT_TRUE(sched_->Submit(std::move(r)).ok());
  const std::string text = Text(sink->Wait());
  EXPECT_EQ(sink->WaitInfo().reason, FinishReason::kStop);
  ASSERT_EQ(text.size(), 3u) << text;
  for (char c : text) EXPECT_TRUE(c >= 'a' && c <= 'c') << text;
}

TEST_F(ConstrainedChoiceTest, AFreeSequenceBesideAConstrainedOneDecodesAsAlone) {
  GenerationRequest alone = Request(12, 11);
  alone.sampling.temperature = 0;
  auto alone_sink = std::static_pointer_cast<CollectingSink>(alone.sink);
  ASSERT_TRUE(sched_->Submit(std::move(alone)).ok());
  const std::vector<int32_t> expected = alone_sink->Wait();

  GenerationRequest constrained = Request(40, 12);
  constrained.constraint = Constraint(Gbnf(R"(root ::= "[" [0-9]{1,4} ("," [0-9]{1,4})* "]")"));
  auto c_sink = std::static_pointer_cast<CollectingSink>(constrained.sink);
  GenerationRequest free = Request(12, 11);
  free.sampling.temperature = 0;
  auto free_sink = std::static_pointer_cast<CollectingSink>(free.sink);
  ASSERT_TRUE(sched_->Submit(std::move(constrained)).ok());
  ASSERT_TRUE(sched_->Submit(std::move(free)).ok());
  EXPECT_EQ(free_sink->Wait(), expected);
  const FinishInfo info = c_sink->WaitInfo();
  ASSERT_NE(info.reason, FinishReason::kError) << info.status.ToString();
  const std::string text = Text(c_sink->Wait());
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text[0], '[') << text;
  if (info.reason == FinishReason::kStop) {
    EXPECT_EQ(text.back(), ']') << text;
  }
}

TEST_F(ConstrainedChoiceTest, AForcedTokenTheGrammarRefusesFailsTheSequence) {
  GenerationRequest r = Request(4, 1);
  r.constraint = Constraint(Gbnf(R"(root ::= "a"+)"));
  r.forced_tokens = {tok_->FindToken("x")};
  auto sink = std::static_pointer_cast<CollectingSink>(r.sink);
  ASSERT_TRUE(sched_->Submit(std::move(r)).ok());
  const FinishInfo info = sink->WaitInfo();
  EXPECT_EQ(info.reason, FinishReason::kError);
  EXPECT_NE(info.status.message().find("not allowed"), std::string::npos) << info.status.ToString();
  EXPECT_TRUE(sink->Wait().empty());
}

}  // namespace
}  // namespace sparrow
