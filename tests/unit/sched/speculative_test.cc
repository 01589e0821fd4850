// Speculative decoding on the trained KJV pair (5M target, 0.7M draft of the same tokenizer):
// greedy answers are the target's own token for token with a draft model, with prompt lookup and
// with predicted outputs, for several sequences batched at once and with prefix reuse; drafts
// are verified (some accepted) and rejected drafts leave no block behind.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "engine/sched/scheduler.h"
#include "engine/spec/vocab_match.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/util/collecting_sink.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

struct Answer {
  std::vector<int32_t> tokens;
  FinishInfo info;
};

const std::string kKjv = "/kjv/models/";
const std::vector<std::string> kPrompts = {"In the beginning",
                                           "And the LORD spake unto Moses, saying,",
                                           "Blessed are the", "And it came to pass, when the king"};

class SpeculativeTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    const std::string dir = testing::SharedDir() + kKjv;
    auto target = Model::Load(dir + "kjv-llama-5m-q8_0.gguf");
    auto draft = Model::Load(dir + "kjv-llama-draft-0.7m-q8_0.gguf");
    if (!target.ok() || !draft.ok()) return;
    owned_target_ = std::move(target).value();
    owned_draft_ = std::move(draft).value();
    owned_tok_ = LoadTokenizer(owned_target_->file()).value();
    target_ = owned_target_.get();
    draft_ = owned_draft_.get();
    tok_ = owned_tok_.get();
  }
  void SetUp() override {
    if (target_ == nullptr) GTEST_SKIP() << "the KJV models are not in " << testing::SharedDir();
  }

  static SchedulerOptions Options(SpecType type) {
    SchedulerOptions o;
    o.n_ctx = 256;
    o.max_running = 8;
    o.is_eog = [](int32_t id) { return tok_->IsEog(id); };
    o.spec.type = type;
    o.spec.draft_max = 8;
    o.spec.draft_min = 1;
    o.spec.draft_model = draft_;
    return o;
  }

  static GenerationRequest Request(const std::string& prompt, int64_t max_tokens,
                                   std::shared_ptr<RequestSink> sink) {
    GenerationRequest r;
    r.prompt = tok_->Tokenize(prompt, /*add_special=*/true, /*parse_special=*/false);
    r.max_tokens = max_tokens;
    r.sampling.temperature = 0;
    r.sink = std::move(sink);
    return r;
  }

  // Every prompt submitted at once (one batch), each answer as it came.
  static std::vector<Answer> RunAll(Scheduler& s, const std::vector<GenerationRequest>& reqs) {
    std::vector<std::shared_ptr<testing::CollectingSink>> sinks;
    for (GenerationRequest r : reqs) {
      sinks.push_back(std::make_shared<testing::CollectingSink>());
      r.sink = sinks.back();
      EXPECT_TRUE(s.Submit(std::move(r)).ok());
    }
    std::vector<Answer> out;
    for (auto& k : sinks) {
      FinishInfo info = k->WaitInfo();
      out.push_back({k->Wait(), info});
    }
    return out;
  }

  static std::vector<GenerationRequest> Requests(int64_t max_tokens) {
    std::vector<GenerationRequest> reqs;
    for (const std::string& p : kPrompts) reqs.push_back(Request(p, max_tokens, nullptr));
    return reqs;
  }

  // The target's own greedy answers (no drafting), computed once.
  static const std::vector<Answer>& Reference() {
    static const std::vector<Answer> ref = [] {
      Scheduler s(*target_, nullptr, Options(SpecType::kNone));
      return RunAll(s, Requests(kMaxTokens));
    }();
    return ref;
  }

  static constexpr int64_t kMaxTokens = 64;
  static inline std::unique_ptr<Model> owned_target_, owned_draft_;
  static inline std::unique_ptr<Tokenizer> owned_tok_;
  static inline Model* target_ = nullptr;
  static inline Model* draft_ = nullptr;
  static inline Tokenizer* tok_ = nullptr;
};

TEST_F(SpeculativeTest, DraftModelGreedyAnswersAreTheTargetsOwnInABatch) {
  Scheduler s(*target_, nullptr, Options(SpecType::kDraft));
  const std::vector<Answer> got = RunAll(s, Requests(kMaxTokens));
  const std::vector<Answer>& ref = Reference();
  ASSERT_EQ(got.size(), ref.size());
  int64_t drafted = 0, accepted = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].tokens, ref[i].tokens) << kPrompts[i];
    EXPECT_EQ(got[i].info.reason, ref[i].info.reason) << kPrompts[i];
    drafted += got[i].info.draft_tokens;
    accepted += got[i].info.accepted_draft_tokens;
  }
  const SchedulerStats st = s.Stats();
  // The draft model agrees with the target now and then (llama.cpp measured 24% on this pair).
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, drafted);
  EXPECT_EQ(st.spec_drafted[static_cast<int>(DraftSource::kModel)], drafted);
  EXPECT_EQ(st.spec_accepted[static_cast<int>(DraftSource::kModel)], accepted);
  // Fewer target steps than tokens: accepted drafts came for free.
  EXPECT_LT(st.steps, st.generated_tokens);
  // Every rejected draft's block went back: nothing is held once the answers are in.
  EXPECT_EQ(st.kv.used_blocks, 0);
}

TEST_F(SpeculativeTest, ReusedPrefixesAndOneSequenceAtATimeGiveTheSameAnswers) {
  Scheduler s(*target_, nullptr, Options(SpecType::kDraft));
  const std::vector<Answer>& ref = Reference();
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < kPrompts.size(); ++i) {
      const std::vector<Answer> got = RunAll(s, {Request(kPrompts[i], kMaxTokens, nullptr)});
      EXPECT_EQ(got[0].tokens, ref[i].tokens) << kPrompts[i] << " round " << round;
      // The second time the prompt's full blocks come from the prefix cache.
      if (round == 1 && ref[i].info.prompt_tokens > 16) {
        EXPECT_GT(got[0].info.cached_prompt_tokens, 0);
      }
    }
  }
  // A follow-up whose prompt is a whole earlier answer reuses the blocks the answer published
  // (only accepted tokens reach the prefix cache, or the reuse would change the answer).
  GenerationRequest follow = Request(kPrompts[1], 32, nullptr);
  follow.prompt.insert(follow.prompt.end(), ref[1].tokens.begin(), ref[1].tokens.end());
  Scheduler plain(*target_, nullptr, Options(SpecType::kNone));
  const std::vector<Answer> want = RunAll(plain, {follow});
  const std::vector<Answer> got = RunAll(s, {follow});
  EXPECT_EQ(got[0].tokens, want[0].tokens);
  EXPECT_GE(got[0].info.cached_prompt_tokens, 48);
  EXPECT_EQ(s.Stats().kv.used_blocks, 0);
}

TEST_F(SpeculativeTest, PromptLookupGreedyAnswersAreTheTargetsOwn) {
  Scheduler s(*target_, nullptr, Options(SpecType::kNgram));
  const std::vector<Answer> got = RunAll(s, Requests(kMaxTokens));
  const std::vector<Answer>& ref = Reference();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].tokens, ref[i].tokens) << kPrompts[i];
  EXPECT_GT(s.Stats().spec_drafted[static_cast<int>(DraftSource::kNgram)], 0);
}

TEST_F(SpeculativeTest, APredictionThatIsTheAnswerIsAcceptedWholeAndAWrongOneChangesNothing) {
  Scheduler s(*target_, nullptr, Options(SpecType::kNone));
  const std::vector<Answer>& ref = Reference();
  std::vector<GenerationRequest> reqs = Requests(kMaxTokens);
  // Right, half right (the second half replaced), and unrelated.
  reqs[0].prediction = ref[0].tokens;
  reqs[1].prediction = ref[1].tokens;
  for (size_t k = ref[1].tokens.size() / 2; k < ref[1].tokens.size(); ++k) {
    reqs[1].prediction[k] = ref[3].tokens[k % ref[3].tokens.size()];
  }
  reqs[2].prediction = ref[3].tokens;
  const std::vector<Answer> got = RunAll(s, reqs);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(got[i].tokens, ref[i].tokens) << kPrompts[i];
  const auto n0 = static_cast<int64_t>(ref[0].tokens.size());
  // Every token but the last (which ends the answer: no room for drafts after it).
  EXPECT_GE(got[0].info.accepted_prediction_tokens, n0 - 2);
  EXPECT_LE(got[0].info.rejected_prediction_tokens, 2);
  EXPECT_GE(got[1].info.accepted_prediction_tokens,
            static_cast<int64_t>(ref[1].tokens.size()) / 2 - 2);
  EXPECT_GT(got[1].info.rejected_prediction_tokens, 0);
  EXPECT_EQ(got[3].info.accepted_prediction_tokens, 0);  // no prediction
  EXPECT_EQ(s.Stats().kv.used_blocks, 0);
}

TEST_F(SpeculativeTest, ADraftOfAnotherVocabularyIsRefusedNamingTheToken) {
  auto other = Model::Load(testing::ModelPath("stories260K.gguf"));
  ASSERT_TRUE(other.ok());
  auto other_tok = LoadTokenizer((*other)->file());
  ASSERT_TRUE(other_tok.ok());
  const Status st = CheckDraftVocab(*tok_, "kjv.gguf", **other_tok, "stories260K.gguf");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("stories260K.gguf"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("token "), std::string::npos) << st.message();
  auto draft_tok = LoadTokenizer(draft_->file());
  ASSERT_TRUE(draft_tok.ok());
  EXPECT_TRUE(CheckDraftVocab(*tok_, "kjv.gguf", **draft_tok, "draft.gguf").ok());
}

// Tokens `first` and `fifth` of each answer to `base` with seeds [seed0, seed0 + n) (-1 where
// the answer ended before), 16 requests at a time.
void SampleTokens(Scheduler& s, const GenerationRequest& base, int64_t n, uint64_t seed0,
                  std::vector<int32_t>* first, std::vector<int32_t>* fifth) {
  std::vector<GenerationRequest> reqs;
  for (int64_t i = 0; i < n; ++i) {
    GenerationRequest r = base;
    r.sampling.seed = seed0 + static_cast<uint64_t>(i);
    reqs.push_back(std::move(r));
    if (reqs.size() < 16 && i + 1 < n) continue;
    for (const Answer& a : SpeculativeTest::RunAll(s, reqs)) {
      first->push_back(a.tokens.empty() ? -1 : a.tokens[0]);
      fifth->push_back(a.tokens.size() < 5 ? -1 : a.tokens[4]);
    }
    reqs.clear();
  }
}

// Pearson's two-sample chi-square over the tokens seen (rare ones pooled), against its 0.1%
// critical value (Wilson-Hilferty): true when the samples may come from one distribution.
bool SameDistribution(const std::vector<int32_t>& a, const std::vector<int32_t>& b, double* stat) {
  std::map<int32_t, std::pair<int64_t, int64_t>> counts;
  for (int32_t t : a) ++counts[t].first;
  for (int32_t t : b) ++counts[t].second;
  std::vector<std::pair<int64_t, int64_t>> cells;
  std::pair<int64_t, int64_t> rare{0, 0};
  for (const auto& [t, c] : counts) {
    if (c.first + c.second < 10) {
      rare.first += c.first;
      rare.second += c.second;
    } else {
      cells.push_back(c);
    }
  }
  if (rare.first + rare.second > 0) cells.push_back(rare);
  *stat = 0;
  for (const auto& [x, y] : cells) {
    *stat += static_cast<double>((x - y) * (x - y)) / static_cast<double>(x + y);
  }
  const double df = static_cast<double>(cells.size()) - 1;
  if (df < 1) return true;
  const double z = 3.09;  // one-sided 0.1%
  const double h = 2.0 / (9.0 * df);
  const double critical = df * std::pow(1 - h + z * std::sqrt(h), 3);
  return *stat < critical;
}

// The sampler's distribution is kept: stories260K (cheap enough for thousands of draws) drafts
// for itself, greedily, so that its drafts are accepted with the probability the sampler gives
// them and rejected otherwise.
TEST_F(SpeculativeTest, SamplingWithDraftsKeepsTheTargetsDistribution) {
  auto m = Model::Load(testing::ModelPath("stories260K-q8_0.gguf"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto tok = LoadTokenizer((*m)->file());
  ASSERT_TRUE(tok.ok());
  SchedulerOptions plain_opts;
  plain_opts.n_ctx = 64;
  plain_opts.max_running = 16;
  plain_opts.is_eog = [t = tok->get()](int32_t id) { return t->IsEog(id); };
  SchedulerOptions draft_opts = plain_opts;
  draft_opts.spec.type = SpecType::kDraft;
  draft_opts.spec.draft_model = m->get();
  draft_opts.spec.draft_max = 4;
  draft_opts.spec.draft_p_min = 0;  // always a draft, so that most steps verify some
  // Every sampler stage on.
  GenerationRequest base;
  base.prompt = (*tok)->Tokenize("Once upon a time", true, false);
  base.max_tokens = 5;
  base.sampling.temperature = 1.0f;
  base.sampling.top_k = 40;
  base.sampling.top_p = 0.95f;
  base.sampling.min_p = 0.02f;
  constexpr int64_t kDraws = 800;
  Scheduler plain(**m, nullptr, plain_opts);
  Scheduler drafted(**m, nullptr, draft_opts);
  // Distinct seeds on each side: two independent samples, not one stream twice.
  std::vector<int32_t> want1, want5, got1, got5;
  SampleTokens(plain, base, kDraws, 1, &want1, &want5);
  SampleTokens(drafted, base, kDraws, 100000, &got1, &got5);
  double stat = 0;
  EXPECT_TRUE(SameDistribution(want1, got1, &stat)) << "first token: chi2 " << stat;
  EXPECT_TRUE(SameDistribution(want5, got5, &stat)) << "fifth token: chi2 " << stat;
  const SchedulerStats st = drafted.Stats();
  const int64_t accepted = st.spec_accepted[static_cast<int>(DraftSource::kModel)];
  EXPECT_GT(accepted, kDraws / 2);
  EXPECT_LT(accepted, st.spec_drafted[static_cast<int>(DraftSource::kModel)]);
  // The test tells distributions apart: a cooler sampler's fifth token is another one.
  GenerationRequest cool = base;
  cool.sampling.temperature = 0.7f;
  std::vector<int32_t> cool1, cool5;
  SampleTokens(plain, cool, kDraws, 200000, &cool1, &cool5);
  EXPECT_FALSE(SameDistribution(want5, cool5, &stat)) << "chi2 " << stat;
}

}  // namespace
}  // namespace sparrow
