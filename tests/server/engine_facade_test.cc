// EngineFacade over a real served model (stories260K): what it tells of the model, its
// tokenizer, a generation from Resolve through Submit to the sink's finish, the drain and the
// pressure report, and that a facade keeps serving the model it was taken on after a reload
// swapped another one in.
#include "server/core/engine_facade.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <thread>

#include "server/core/served_model.h"
#include "server/core/server_context.h"
#include "tests/util/test_paths.h"

namespace sparrow::server {
namespace {

std::unique_ptr<ServerContext> MakeContext(int memory_pressure) {
  ServerConfig c;
  c.model = testing::ModelPath("stories260K.gguf");
  c.threads = 1;
  c.memory_pressure = memory_pressure;  // 2: budget control without the machine's own sources
  c.hw_profile = "none";
  auto ctx = CreateServerContext(c);
  EXPECT_TRUE(ctx.ok()) << ctx.status().ToString();
  return ctx.ok() ? std::move(*ctx) : nullptr;
}

GenerationSpec Greedy(int64_t max_tokens) {
  GenerationSpec spec;
  spec.text = "Once upon a time";
  spec.max_tokens = max_tokens;
  spec.sampling.temperature = 0;
  return spec;
}

// Runs `spec` to its end on `engine`; the text it made, or the refusal as "refused: ...".
std::string Generate(const EngineFacade& engine, const GenerationSpec& spec,
                     FinishInfo* info = nullptr) {
  ResolvedGeneration g;
  GenerationError error;
  if (!engine.Resolve(spec, &g, &error)) return "refused: " + error.status.message();
  auto sink = engine.MakeSink({}, nullptr, [] {});
  const Status st = engine.Submit(g, {sink});
  if (!st.ok()) return "refused: " + st.message();
  std::string text;
  std::vector<StreamChunk> chunks;
  while (!sink->Drain(&chunks)) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  for (const StreamChunk& c : chunks) text += c.text;
  if (info != nullptr) *info = sink->finish_info();
  return text;
}

TEST(EngineFacadeTest, DescribesTheServedModel) {
  auto ctx = MakeContext(0);
  ASSERT_NE(ctx, nullptr);
  const EngineFacade engine = ctx->engine();
  EXPECT_EQ(engine.model_id(), "stories260K");
  const ModelInfo info = engine.Info();
  EXPECT_EQ(info.id, "stories260K");
  EXPECT_EQ(info.file_name, "stories260K.gguf");
  EXPECT_EQ(info.architecture, "llama");
  EXPECT_EQ(info.n_vocab, 512);
  EXPECT_EQ(info.n_vocab, engine.n_vocab());
  EXPECT_EQ(info.n_ctx, engine.n_ctx());
  EXPECT_GT(info.n_ctx, 0);
  // stories260K has about 260 thousand parameters, as its name says.
  EXPECT_GT(info.n_params, 200000);
  EXPECT_LT(info.n_params, 320000);
}

TEST(EngineFacadeTest, TokenizesAndDetokenizesWithTheModelsVocabulary) {
  auto ctx = MakeContext(0);
  ASSERT_NE(ctx, nullptr);
  const EngineFacade engine = ctx->engine();
  const std::vector<int32_t> ids = engine.Tokenize("Once upon a time", true, false);
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(ids[0], 1);  // BOS
  EXPECT_EQ(engine.Detokenize(ids, true, false), " Once upon a time");
  std::string pieces;
  for (size_t i = 1; i < ids.size(); ++i) pieces += engine.TokenPiece(ids[i]);
  EXPECT_EQ(pieces, " Once upon a time");        // SPM: the space the tokenizer put in front
  EXPECT_EQ(engine.TokenPiece(1), "");           // a control token is silent ...
  EXPECT_EQ(engine.TokenPiece(1, true), "<s>");  // ... unless asked for
  EXPECT_EQ(engine.TokenPiece(engine.n_vocab()), "");
  // Client text never becomes control tokens unless it asks.
  EXPECT_GT(engine.Tokenize("a</s>", false, false).size(),
            engine.Tokenize("a</s>", false, true).size());
}

TEST(EngineFacadeTest, GeneratesAndCountsWhatItDid) {
  auto ctx = MakeContext(0);
  ASSERT_NE(ctx, nullptr);
  const EngineFacade engine = ctx->engine();
  const int64_t finished = engine.Stats().scheduler.requests_finished;
  FinishInfo info;
  const std::string text = Generate(engine, Greedy(6), &info);
  EXPECT_EQ(info.reason, FinishReason::kLength) << text;
  EXPECT_EQ(info.completion_tokens, 6);
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(Generate(engine, Greedy(6)), text);  // greedy: the same again
  EXPECT_EQ(engine.Stats().scheduler.requests_finished, finished + 2);
  EXPECT_FALSE(engine.Stats().memory.has_value());  // memory_pressure 0

  GenerationSpec other = Greedy(6);
  other.model = "gpt-9";
  EXPECT_EQ(Generate(engine, other),
            "refused: The model 'gpt-9' does not exist; this server serves 'stories260K'");
}

TEST(EngineFacadeTest, RefusesWhileDrainingWithoutCallingTheSink) {
  auto ctx = MakeContext(0);
  ASSERT_NE(ctx, nullptr);
  const EngineFacade engine = ctx->engine();
  ResolvedGeneration g;
  GenerationError error;
  ASSERT_TRUE(engine.Resolve(Greedy(4), &g, &error)) << error.status.message();
  bool called = false;
  auto sink = engine.MakeSink({}, nullptr, [&called] { called = true; });
  ctx->draining = true;
  const Status st = engine.Submit(g, {sink});
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_NE(st.message().find("draining"), std::string::npos) << st.message();
  EXPECT_FALSE(called);
  EXPECT_FALSE(sink->finished());
  ctx->draining = false;
  EXPECT_NE(Generate(engine, Greedy(2)).rfind("refused", 0), 0u);
}

TEST(EngineFacadeTest, ReportsPressureOnlyWithBudgetControl) {
  auto off = MakeContext(0);
  ASSERT_NE(off, nullptr);
  const Result<uint64_t> refused = off->engine().ReportPressure(PressureLevel::kLow, "test");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(refused.status().message().find("memory_pressure 0"), std::string::npos);

  auto on = MakeContext(2);
  ASSERT_NE(on, nullptr);
  const EngineFacade engine = on->engine();
  const Result<uint64_t> budget = engine.ReportPressure(PressureLevel::kCritical, "test");
  ASSERT_TRUE(budget.ok()) << budget.status().ToString();
  const EngineStats stats = engine.Stats();
  ASSERT_TRUE(stats.memory.has_value());
  EXPECT_EQ(*budget, stats.memory->budget_bytes);
  EXPECT_GT(*budget, 0u);
}

TEST(EngineFacadeTest, KeepsServingItsModelAfterAReloadSwapsAnotherIn) {
  auto ctx = MakeContext(0);
  ASSERT_NE(ctx, nullptr);
  std::optional<EngineFacade> before = ctx->engine();
  auto next = LoadServedModel(ctx->config, ctx->config.model, "reloaded");
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  std::weak_ptr<ServedModel> old = ctx->SwapServed(std::move(*next));
  EXPECT_FALSE(old.expired());  // `before` holds it
  EXPECT_EQ(ctx->engine().model_id(), "reloaded");
  EXPECT_EQ(before->model_id(), "stories260K");
  GenerationSpec spec = Greedy(3);
  spec.model = "stories260K";
  FinishInfo info;
  Generate(*before, spec, &info);
  EXPECT_EQ(info.completion_tokens, 3);
  EXPECT_EQ(before->Stats().scheduler.requests_finished, 1);
  EXPECT_EQ(ctx->engine().Stats().scheduler.requests_finished, 0);
  {
    const EngineFacade copy = *before;  // a copy pins the same model
    before.reset();
    EXPECT_FALSE(old.expired());
    EXPECT_EQ(copy.model_id(), "stories260K");
  }
  EXPECT_TRUE(old.expired());  // the last facade on it let it go
}

TEST(EngineFacadeTest, SanitizesUtf8AsStreamsDo) {
  EXPECT_EQ(SanitizedUtf8("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(SanitizedUtf8("a\xff"
                          "b"),
            "a\xef\xbf\xbd"
            "b");
  EXPECT_EQ(SanitizedUtf8("cut \xe2\x82"), "cut \xef\xbf\xbd\xef\xbf\xbd");  // byte by byte
}

}  // namespace
}  // namespace sparrow::server
