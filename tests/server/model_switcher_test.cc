// ModelSwitcher in process (models_dir of two real tiny models): EngineFor loads the model a
// request names in place of the served one, concurrent callers for both models each get their
// own, names outside the directory are NotFound, and a file that fails to load leaves the old
// model served; SleepNow (keep_alive 0) unloads it until the next request. (Idle sleep and RSS
// are in sparrowd_models_test, against the real process.)
#include "server/core/model_switcher.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "server/core/engine_facade.h"
#include "server/core/server_context.h"
#include "tests/util/test_paths.h"

namespace sparrow::server {
namespace {

std::unique_ptr<ServerContext> MakeContext() {
  const std::string dir = testing::TempPath("models");
  std::filesystem::create_directories(dir);
  std::filesystem::create_symlink(testing::ModelPath("stories260K.gguf"), dir + "/a.gguf");
  std::filesystem::create_symlink(testing::ModelPath("aidreams260K-f32.gguf"), dir + "/b.gguf");
  std::ofstream(dir + "/broken.gguf") << "not a model";
  ServerConfig c;
  c.models_dir = dir;
  c.model = "b.gguf";
  c.threads = 1;
  c.memory_pressure = 0;
  c.hw_profile = "none";
  auto ctx = CreateServerContext(c);
  EXPECT_TRUE(ctx.ok()) << ctx.status().ToString();
  return ctx.ok() ? std::move(*ctx) : nullptr;
}

// The greedy text `engine` answers "Once upon" with.
std::string Answer(const EngineFacade& engine) {
  GenerationSpec spec;
  spec.model = engine.model_id();
  spec.text = "Once upon";
  spec.max_tokens = 8;
  spec.sampling.temperature = 0;
  ResolvedGeneration g;
  GenerationError error;
  EXPECT_TRUE(engine.Resolve(spec, &g, &error)) << error.status.message();
  auto sink = engine.MakeSink({}, nullptr, [] {});
  EXPECT_TRUE(engine.Submit(g, {sink}).ok());
  std::vector<StreamChunk> chunks;
  while (!sink->Drain(&chunks)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::string text;
  for (const StreamChunk& c : chunks) text += c.text;
  return text;
}

TEST(ModelSwitcherTest, ListsTheDirectoryByStemAndServesTheNamedFirstModel) {
  auto ctx = MakeContext();
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(ctx->model_id(), "b");
  const std::vector<ModelEntry> models = ctx->ListModels();
  ASSERT_EQ(models.size(), 3u);
  EXPECT_EQ(models[0].id, "a");
  EXPECT_EQ(models[0].state, ModelState::kAvailable);
  EXPECT_EQ(models[1].id, "b");
  EXPECT_EQ(models[1].state, ModelState::kLoaded);
  EXPECT_EQ(models[2].id, "broken");
}

TEST(ModelSwitcherTest, ConcurrentCallersForTwoModelsEachGetTheirOwn) {
  auto ctx = MakeContext();
  ASSERT_NE(ctx, nullptr);
  std::string answer_a, answer_b;
  {
    auto a = ctx->EngineFor("a");
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(a->model_id(), "a");
    EXPECT_EQ(ctx->model_id(), "a");
    answer_a = Answer(*a);
  }  // the facade goes: the switch need not wait for it
  {
    auto b = ctx->EngineFor("b");
    ASSERT_TRUE(b.ok());
    answer_b = Answer(*b);
  }
  ASSERT_NE(answer_a, answer_b);
  std::vector<std::thread> callers;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&, t] {
      for (int i = 0; i < 4; ++i) {
        const std::string id = (t + i) % 2 ? "a" : "b";
        auto e = ctx->EngineFor(id);
        if (!e.ok() || e->model_id() != id || Answer(*e) != (id == "a" ? answer_a : answer_b)) {
          ++wrong[t];
        }
      }
    });
  }
  for (auto& c : callers) c.join();
  EXPECT_EQ(wrong, std::vector<int>(4, 0));
}

TEST(ModelSwitcherTest, UnknownNamesAreNotFoundAndABrokenFileLeavesTheOldModel) {
  auto ctx = MakeContext();
  ASSERT_NE(ctx, nullptr);
  for (const std::string name : {"c", "a.gguf", "../a", "/a"}) {
    const auto e = ctx->EngineFor(name);
    EXPECT_EQ(e.status().code(), StatusCode::kNotFound) << name;
  }
  const auto broken = ctx->EngineFor("broken");
  EXPECT_EQ(broken.status().code(), StatusCode::kInternal);
  EXPECT_NE(broken.status().message().find("broken.gguf"), std::string::npos)
      << broken.status().message();
  EXPECT_EQ(ctx->model_id(), "b");
  EXPECT_EQ(ModelErrorCode(broken.status()), "model_load_failed");
  const auto again = ctx->EngineFor("");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->model_id(), "b");
}

// Ollama's keep_alive 0: the model is unloaded at once and the next request loads it again;
// another model's name, or a model that is not loaded, leaves things as they are.
TEST(ModelSwitcherTest, SleepNowAndWhenIdleUnloadAndTheNextRequestLoadsAgain) {
  auto ctx = MakeContext();
  ASSERT_NE(ctx, nullptr);
  ASSERT_TRUE(ctx->switcher->SleepNow("a").ok());  // not the loaded one
  EXPECT_FALSE(ctx->switcher->sleeping());
  ASSERT_TRUE(ctx->switcher->SleepNow("b").ok());
  EXPECT_TRUE(ctx->switcher->sleeping());
  EXPECT_FALSE(ctx->LoadedEngine().has_value());
  EXPECT_TRUE(ctx->switcher->SleepNow("b").ok());  // asleep already
  auto engine = ctx->EngineFor("b");
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  EXPECT_FALSE(Answer(*engine).empty());
  EXPECT_FALSE(ctx->switcher->sleeping());
  // Asked to sleep once idle, the switcher's thread does it (looked at until it has).
  ctx->switcher->SleepWhenIdle("b");
  for (int i = 0; i < 500 && !ctx->switcher->sleeping(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(ctx->switcher->sleeping());
}

}  // namespace
}  // namespace sparrow::server
