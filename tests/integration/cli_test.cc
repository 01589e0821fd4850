// The `sparrow` CLI end to end: real models in, text and exit codes out; every bad input is
// one clear line on stderr and a non-zero exit, never a crash.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/util/golden.h"
#include "tests/util/hardware_profile.h"
#include "tests/util/synthetic_llama.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

struct CliRun {
  int exit_code;
  std::string out, err;
};

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

CliRun Sparrow(const std::string& args) {
  const std::string out = testing::TempPath("out.txt"), err = testing::TempPath("err.txt");
  const std::string cmd = std::string(SPARROW_CLI) + " " + args + " >" + out + " 2>" + err;
  const int status = std::system(cmd.c_str());
  CliRun r{WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
           testing::ReadFileOrDie(out), testing::ReadFileOrDie(err)};
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

int Lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

const std::string kStories = testing::ModelPath("stories260K.gguf");

TEST(CliTest, GreedyStoryMatchesLlamaCpp) {
  CliRun r = Sparrow("generate -m " + kStories + " -p \"Once upon a time\" -n 48 --temp 0 -t 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("Once upon a time, there was a little girl named Lily.", 0), 0u) << r.out;
  auto g = testing::LoadGolden(testing::TestdataPath("golden/stories260K.json"));
  EXPECT_EQ(r.out, g.prompts[0].prompt + g.prompts[0].generated_text_bytes + "\n");
  EXPECT_NE(r.err.find("tokens/s"), std::string::npos) << r.err;
}

TEST(CliTest, JsonOutputCarriesTokensTextAndTimings) {
  auto g = testing::LoadGolden(testing::TestdataPath("golden/synth-qwen2-q4_0.json"));
  const std::string model = testing::GoldenModelPath(g);
  CliRun r = Sparrow("generate -m " + model + " -p " + Quote(g.prompts[2].prompt) +
                     " -n 48 --temp 0 --json -t 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("prompt_tokens").get<std::vector<int32_t>>(), g.prompts[2].prompt_tokens);
  auto tokens = j.at("tokens").get<std::vector<int32_t>>();
  ASSERT_EQ(tokens.size(), 48u);
  // Quantized: compare up to the first step whose llama.cpp margin is under 0.25.
  size_t i = 0;
  for (; i < tokens.size() && g.prompts[2].margins[i] >= 0.25f; ++i)
    ASSERT_EQ(tokens[i], g.prompts[2].generated_tokens[i]) << i;
  EXPECT_GT(i, 5u);
  EXPECT_TRUE(j.at("text").is_string());
  EXPECT_EQ(j.at("timings").at("predicted_n"), 48);
  EXPECT_EQ(j.at("finish_reason"), "length");
}

TEST(CliTest, SeededSamplingIsReproducible) {
  const std::string args =
      "generate -m " + kStories + " -p Once -n 40 --temp 0.9 --top-k 20 --seed 7 --no-echo";
  CliRun a = Sparrow(args), b = Sparrow(args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  CliRun c = Sparrow("generate -m " + kStories +
                     " -p Once -n 40 --temp 0.9 --top-k 20 --seed 8 --no-echo");
  EXPECT_NE(a.out, c.out);
}

TEST(CliTest, StopsAtContextSize) {
  CliRun r = Sparrow("generate -m " + kStories + " -p Once -n 100 --temp 0 -c 16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("finish_reason"), "context");
  EXPECT_LE(j.at("tokens").size() + j.at("prompt_tokens").size(), 17u);
}

void ExpectOneLineError(const CliRun& r, const std::string& needle) {
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.exit_code, 128) << "crashed: " << r.err;
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

TEST(CliTest, MissingFile) {
  ExpectOneLineError(Sparrow("generate -m /no/such/model.gguf -p hi"),
                     "/no/such/model.gguf: no such file");
  ExpectOneLineError(Sparrow("info /no/such/model.gguf"), "no such file");
}

TEST(CliTest, TruncatedAndCorruptFiles) {
  const std::string bytes = testing::ReadFileOrDie(kStories);
  const std::string path = testing::TempPath("truncated.gguf");
  for (size_t cut : {size_t{3}, size_t{100}, size_t{5000}, bytes.size() / 2, bytes.size() - 1}) {
    std::ofstream(path, std::ios::binary).write(bytes.data(), cut);
    CliRun r = Sparrow("generate -m " + path + " -p hi");
    SCOPED_TRACE("cut at " + std::to_string(cut));
    ExpectOneLineError(r, path);
    EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
  }
  std::ofstream(path, std::ios::binary) << "this is a text file, not a model\n";
  ExpectOneLineError(Sparrow("generate -m " + path + " -p hi"), "not a GGUF file");
  std::ofstream(path, std::ios::binary).flush();
  ExpectOneLineError(Sparrow("generate -m " + path + " -p hi"), "empty");
  std::remove(path.c_str());
}

TEST(CliTest, UnsupportedArchitecture) {
  // A vocabulary-only file of the gpt2 architecture.
  ExpectOneLineError(
      Sparrow("generate -m " + testing::ModelPath("vocab/ggml-vocab-gpt-2.gguf") + " -p hi"),
      "architecture 'gpt2' is not supported");
}

TEST(CliTest, BadFlagValues) {
  ExpectOneLineError(Sparrow("generate -m " + kStories + " --top-p 2"), "top_p");
  CliRun r = Sparrow("generate -p hi");  // no model
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("model"), std::string::npos) << r.err;
}

TEST(CliTest, PromptLongerThanContext) {
  ExpectOneLineError(Sparrow("generate -m " + kStories +
                             " -c 8 -p \"one two three four five six seven eight nine\""),
                     "context");
}

TEST(CliTest, InfoAndTokenize) {
  CliRun info = Sparrow("info " + kStories);
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("llama.embedding_length"), std::string::npos);
  EXPECT_NE(info.out.find("blk.4.ffn_down.weight"), std::string::npos);
  CliRun tok = Sparrow("tokenize -m " + kStories + " --ids \"Once upon a time\"");
  ASSERT_EQ(tok.exit_code, 0) << tok.err;
  EXPECT_EQ(tok.out, "[1, 403, 407, 261, 378]\n");
  CliRun help = Sparrow("--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("generate"), std::string::npos);
}

TEST(CliTest, VersionUnknownCommandsAndDefaultsInHelp) {
  CliRun version = Sparrow("--version");
  EXPECT_EQ(version.exit_code, 0) << version.err;
  EXPECT_EQ(version.out, std::string("sparrow ") + SPARROW_PROJECT_VERSION + "\n");
  // A misspelled command is named, with where the list is (CLI11 alone says "A subcommand is
  // required").
  CliRun unknown = Sparrow("frobnicate");
  ExpectOneLineError(unknown, "unknown command 'frobnicate'");
  EXPECT_NE(unknown.err.find("sparrow --help"), std::string::npos) << unknown.err;
  ExpectOneLineError(Sparrow(""), "give a command (sparrow --help lists them)");
  CliRun help = Sparrow("generate --help");
  ASSERT_EQ(help.exit_code, 0) << help.err;
  EXPECT_NE(help.out.find("[0 - 1073741824]=128"), std::string::npos) << help.out;  // -n
  EXPECT_NE(help.out.find("NONNEGATIVE=0"), std::string::npos) << help.out;         // -c
  EXPECT_NE(help.out.find("POSITIVE=512"), std::string::npos) << help.out;          // -b
}

TEST(CliTest, NonPositiveOrAbsurdSizesAreRefusedInAFewWords) {
  for (const std::string value : {"-5", "0", "1e30"}) {
    CliRun r = Sparrow("plan -m " + kStories + " --budget-mb " + value);
    EXPECT_NE(r.exit_code, 0) << value;
    EXPECT_NE(r.err.find("--budget-mb: must be above 0 and at most 16777216, not " + value),
              std::string::npos)
        << r.err;
    EXPECT_LT(r.err.size(), 200u) << r.err;  // CLI11's own check named a 309-digit bound
  }
  CliRun batch = Sparrow("generate -m " + kStories + " -b -1");
  EXPECT_NE(batch.err.find("must be above 0"), std::string::npos) << batch.err;
  EXPECT_LT(batch.err.size(), 200u) << batch.err;
}

// bench tells stderr what it runs as it goes, and a sparse run reports what it reads.
TEST(CliTest, BenchShowsProgressAndWhatASparseRunReads) {
  CliRun dense = Sparrow("bench -m " + kStories + " -p 8 -n 4 -r 2 --no-bandwidth");
  ASSERT_EQ(dense.exit_code, 0) << dense.err;
  EXPECT_NE(dense.err.find("bench: pp8, 1 thread: a warm-up, then 2 timed runs\n"),
            std::string::npos)
      << dense.err;
  EXPECT_NE(dense.err.find("bench: tg4, 1 thread: "), std::string::npos) << dense.err;
  EXPECT_NE(dense.err.find("t/s (median)"), std::string::npos) << dense.err;
  EXPECT_NE(dense.out.find("weights read per token: "), std::string::npos) << dense.out;
  EXPECT_EQ(dense.out.find("dense: "), std::string::npos) << dense.out;

  const std::string pwri = testing::SharedDir() + "/kjv/models/kjv-relu-5m-pwri-q4_0.gguf";
  CliRun sparse = Sparrow("bench -m " + pwri + " -p 0 -n 8 -r 1 --no-bandwidth");
  ASSERT_EQ(sparse.exit_code, 0) << sparse.err;
  EXPECT_NE(sparse.out.find(" in tg8 t=1 (predictor, "), std::string::npos) << sparse.out;
  EXPECT_NE(sparse.out.find("; dense: "), std::string::npos) << sparse.out;
}

// The hot segment's size goes by sparrowd's name, --cache-hot-percent; the older
// --cache-hot-share still works but is no longer listed.
TEST(CliTest, CacheHotPercentIsSparrowdsNameAndTheShareStillWorks) {
  const std::string pwri = testing::SharedDir() + "/kjv/models/kjv-relu-5m-pwri-q4_0.gguf";
  const std::string converted = testing::TempPath("hot-percent.sparrow.gguf");
  CliRun convert = Sparrow("convert -m " + pwri + " -o " + converted);
  ASSERT_EQ(convert.exit_code, 0) << convert.err;
  const std::string run =
      "generate -m " + converted + " -p Once -n 4 --temp 0 --json --cache-mb 1 ";
  // The hot segment's bytes: the default (50 %), then a quarter by either name.
  std::vector<int64_t> hot_bytes;
  for (const std::string flag : {"", "--cache-hot-percent 25", "--cache-hot-share 0.25"}) {
    CliRun r = Sparrow(run + flag);
    ASSERT_EQ(r.exit_code, 0) << flag << ": " << r.err;
    hot_bytes.push_back(
        nlohmann::json::parse(r.out)["sparse"]["cache"]["hot_bytes"].get<int64_t>());
  }
  EXPECT_GT(hot_bytes[0], hot_bytes[1]);
  EXPECT_GT(hot_bytes[1], 0);
  EXPECT_EQ(hot_bytes[1], hot_bytes[2]);
  EXPECT_NE(Sparrow(run + "--cache-hot-percent 150").exit_code, 0);
  CliRun help = Sparrow("generate --help");
  EXPECT_NE(help.out.find("--cache-hot-percent"), std::string::npos) << help.out;
  EXPECT_EQ(help.out.find("--cache-hot-share"), std::string::npos) << help.out;
  std::remove(converted.c_str());
}

// A small hand-written hardware profile: two threads, flash measured at 4 and 64 KiB.
using testing::WriteHardwareProfile;

const std::string kKjvQ4 = testing::SharedDir() + "/kjv/models/kjv-llama-5m-q4_0.gguf";

TEST(CliTest, PlanPrintsAPlanForABudget) {
  const std::string hw = WriteHardwareProfile();
  CliRun r = Sparrow("plan -m " + kKjvQ4 + " --hw " + hw + " --budget-mb 64");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("threads: 2"), std::string::npos) << r.out;  // 18 GB/s beats 10
  EXPECT_NE(r.out.find("budget_mib: 64.000000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# solved in "), std::string::npos) << r.out;

  r = Sparrow("plan -m " + kKjvQ4 + " --hw " + hw + " --budget-mb 64 --threads-max 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("threads"), 1);
  EXPECT_EQ(j.at("binding"), nlohmann::json::array({"max_threads"}));
  EXPECT_LE(j.at("memory_bytes").get<uint64_t>(), uint64_t{64} << 20);
  EXPECT_GT(j.at("predicted_tokens_per_s").get<double>(), 0);
}

TEST(CliTest, PlanRefusesAnInfeasibleBudgetNamingTheSmallestThatWorks) {
  CliRun r = Sparrow("plan -m " + kKjvQ4 + " --hw " + WriteHardwareProfile() + " --budget-mb 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("sparrow plan: Resource exhausted: budget: 1.00 MiB is too small", 0), 0u)
      << r.err;
  EXPECT_NE(r.err.find("(--budget-mb "), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

// A long training context (here 1M tokens of a tiny model): the KV pool it would need is most
// of the floor, and the refusal says so and how to plan for less.
TEST(CliTest, PlanFitsTheContextToTheBudgetAndNamesWhatDoesNotFit) {
  testing::LlamaModelSpec spec;
  spec.n_ctx = 1u << 20;
  const std::string model = testing::TempPath("long-context.gguf");
  ASSERT_TRUE(testing::WriteLlamaModel(spec, model).ok());
  const std::string hw = WriteHardwareProfile();
  // By default the KV pool is for the context sparrowd would choose in that budget.
  CliRun r = Sparrow("plan -m " + model + " --hw " + hw + " --budget-mb 16");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(fitted to the budget; the training context is 1048576)"),
            std::string::npos)
      << r.out;
  // Asked for the whole training context: the KV pool is what does not fit, and it says so.
  r = Sparrow("plan -m " + model + " --hw " + hw + " --budget-mb 16 --kv-tokens 1048576");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("most of it is the KV pool for 1048576 tokens"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("a smaller --kv-tokens plans for less"), std::string::npos) << r.err;
  // With a short context another part is the largest, and it is the one named (this tiny
  // model's prompt-chunk scratch).
  r = Sparrow("plan -m " + model + " --hw " + hw + " --budget-mb 0.01 --kv-tokens 16");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("most of it is the step's scratch"), std::string::npos) << r.err;
  r = Sparrow("plan -m " + model + " --hw " + hw + " --budget-mb 16 --kv-tokens 2048");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(CliTest, ShardPlanPlacesLayersOnTheDevicesDescribed) {
  const std::string model = testing::ModelPath("stories260K.gguf");
  // This device has room for none of the layers: they go to the helper that has.
  CliRun r = Sparrow("shard-plan -m " + model + " --memory-mb 0.6 --device board:64:1:1000:1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("board: layers 0..4 (5)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("per token"), std::string::npos) << r.out;
  // With room here and a slow link there, everything stays here.
  r = Sparrow("shard-plan -m " + model + " --memory-mb 64 --device board:64:1:1:50 --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"device\": \"this device\""), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("board"), std::string::npos) << r.out;
  // Too little memory anywhere: one line naming the bytes.
  r = Sparrow("shard-plan -m " + model + " --memory-mb 0.6 --device board:0.1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("need"), std::string::npos) << r.err;
  r = Sparrow("shard-plan -m " + model + " --device board");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("NAME:MEM_MIB"), std::string::npos) << r.err;
  // The tensor split: every device a slice of every layer, the faster one the larger; the
  // pipeline's prediction beside it.
  r = Sparrow("shard-plan -m " + model +
              " --memory-mb 64 --device board:64:0.5:1000:1 --split tensor");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("this device: a slice (kv heads 0..2, neurons 0..114) of layers 0..4"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("board: a slice (kv heads 3..3, neurons 115..171)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("whole layers per device (--split layers) would take"), std::string::npos)
      << r.out;
  // Little memory here: this device takes what it holds, the board the rest; more of it with
  // the default f16 KV than with f32 rows.
  r = Sparrow("shard-plan -m " + model + " --memory-mb 0.9 --device board:64 --split tensor");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("this device: a slice (kv heads 0..0, neurons 0..50)"), std::string::npos)
      << r.out;
  r = Sparrow(
      "shard-plan -m " + model +
      " --memory-mb 0.9 --device board:64 --split tensor --cache-type-k f32 --cache-type-v f32");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("this device: a slice (kv heads 0..0, neurons 0..30)"), std::string::npos)
      << r.out;
  r = Sparrow("shard-plan -m " + model + " --memory-mb 64 --device board:64 --split tensor --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"ff_begin\""), std::string::npos) << r.out;
}

TEST(CliTest, PlanBadInputsAreOneClearLine) {
  const std::string hw = WriteHardwareProfile();
  const std::string bad_hw = testing::TempPath("bad-hw.yaml");
  std::ofstream(bad_hw) << "version: 1\nmax_threads: 2\nmemory_gb_per_s: [20]\n";
  const std::string pwri = testing::SharedDir() + "/kjv/models/kjv-relu-5m-pwri-q4_0.gguf";
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"plan -m " + kKjvQ4 + " --hw /nonexistent/hw.yaml --budget-mb 64", "sparrow profile-hw"},
      {"plan -m " + kKjvQ4 + " --hw " + bad_hw + " --budget-mb 64", "memory_gb_per_s"},
      {"plan -m " + pwri + " --hw " + hw + " --budget-mb 64", "--active-share"},
      {"plan -m " + kKjvQ4 + " --hw " + hw + " --budget-mb 64 --profile /nonexistent.profile",
       "nonexistent.profile"},
      {"plan -m " + kKjvQ4 + " --hw " + hw + " --budget-mb 64 --min-tok-s 1e9", "min_tokens_per_s"},
  };
  for (const Case& c : cases) {
    CliRun r = Sparrow(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.args;
    EXPECT_EQ(Lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << r.err;
  }
  EXPECT_NE(
      Sparrow("plan -m " + kKjvQ4 + " --hw " + hw + " --budget-mb 64 --objective fast").exit_code,
      0);
  EXPECT_NE(Sparrow("plan -m " + kKjvQ4 + " --hw " + hw).exit_code, 0);  // no budget
}

TEST(CliTest, ProfileHwWritesAProfilePlanReads) {
  const std::string hw = testing::TempPath("measured-hw.yaml");
  CliRun r = Sparrow("profile-hw --quick -t 1 -m " + kKjvQ4 + " -o " + hw);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("max_threads: 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("{block_kib: 4, depth: 1, mib_per_s: "), std::string::npos) << r.out;
  r = Sparrow("plan -m " + kKjvQ4 + " --hw " + hw + " --budget-mb 64");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("threads: 1"), std::string::npos) << r.out;
  r = Sparrow("profile-hw --quick -o " + hw);  // no flash file named
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--no-flash"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sparrow
