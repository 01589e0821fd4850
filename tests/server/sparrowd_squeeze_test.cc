// The real sparrowd inside a real cgroup v1 memory limit, serving 8 greedy streams from a model
// whose FFN is on flash, while a memory hog in the same cgroup grows past what the limit leaves:
// the cgroup's pressure events and headroom reach sparrowd's memory governor, the KV pool and
// the neuron cache shrink and their memory goes back, nothing is OOM-killed, every stream
// completes; when the hog leaves, the cache grows back.
// Beside it, the context and budget sparrowd chooses for itself inside a cgroup's limit.
// Skips where the machine has no cgroup v1 memory controller or the test may not create a
// cgroup, or with SPARROW_SQUEEZE_TEST=0. History: with the neuron cache alone under the budget
// it passed 2 of 3 runs (session 13); with the KV pool under it too, growth capped by the room
// the cgroup has and shrink steps taken from the bytes really held, 6 of 6 (session 14); OOM
// kills under the suite's load in session 15, fixed in session 16 (growth counts what was
// granted and not yet held, memory.failcnt is pressure, critical shrinks the cache at once).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "engine/kernels/quantize.h"
#include "engine/memory/pressure_source.h"
#include "tests/util/converted_model.h"
#include "tests/util/hardware_profile.h"
#include "tests/util/sparrowd_process.h"
#include "tests/util/synthetic_llama.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using json = nlohmann::json;
using testing::SparrowdProcess;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int64_t ReadNumber(const std::string& path) {
  std::ifstream in(path);
  int64_t v = -1;
  in >> v;
  return v;
}

// "oom_kill N" of memory.oom_control (kernels since 4.13), 0 where it is not reported.
int64_t OomKills(const std::string& dir) {
  std::istringstream in(ReadFile(dir + "/memory.oom_control"));
  std::string key;
  int64_t v = 0;
  while (in >> key >> v) {
    if (key == "oom_kill") return v;
  }
  return 0;
}

std::string Post(int port, const std::string& path, const std::string& body) {
  // Only a guard against a server that never answers: squeezed to its floor on a loaded 2-core
  // machine, the eight streams took more than 120 s (the last three were cut off then).
  const int fd = testing::ConnectTcp("127.0.0.1", port, std::chrono::seconds(600));
  if (fd < 0) return "";
  testing::SendAll(fd, "POST " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" +
                           "Content-Type: application/json\r\nContent-Length: " +
                           std::to_string(body.size()) + "\r\n\r\n" + body);
  std::string r = testing::ReadUntilClose(fd);
  close(fd);
  return r;
}

std::string Get(int port, const std::string& path) {
  const int fd = testing::ConnectTcp("127.0.0.1", port);
  if (fd < 0) return "";
  testing::SendAll(fd, "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  std::string r = testing::ReadUntilClose(fd);
  close(fd);
  return r;
}

json Body(const std::string& raw) {
  const size_t at = raw.find("\r\n\r\n");
  return json::parse(at == std::string::npos ? "" : raw.substr(at + 4), nullptr, false);
}

double Gauge(const std::string& metrics, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(metrics, m, std::regex(name + " ([0-9.e+]+)"))) return -1;
  return std::stod(m[1]);
}

// A PowerInfer-layout model whose bundles take 64 MiB (8 layers of 4096 neurons), converted.
std::string SqueezeModel() {
  return testing::WriteConvertedFlashSizedModel("squeeze");
}

// A cgroup v1 memory group of this test's own under ours, removed at the end of the scope; empty
// with `skip` set where the machine has none or the test may not create one.
struct TestCgroup {
  std::string dir;
  ~TestCgroup() {
    if (!dir.empty()) rmdir(dir.c_str());
  }
};

bool MakeTestCgroup(const std::string& name, TestCgroup* cg, std::string* skip) {
  const char* enabled = std::getenv("SPARROW_SQUEEZE_TEST");
  if (enabled && std::string(enabled) == "0") {
    *skip = "SPARROW_SQUEEZE_TEST=0";
    return false;
  }
  const std::string ours = FindMemoryCgroupV1();
  if (ours.empty() || !std::filesystem::exists(ours + "/memory.pressure_level")) {
    *skip = "no cgroup v1 memory controller here";
    return false;
  }
  const std::string dir = ours + "/sparrow-" + name + "-" + std::to_string(getpid());
  if (mkdir(dir.c_str(), 0755) != 0) {
    *skip = "cannot create a cgroup under " + ours + ": " + std::strerror(errno);
    return false;
  }
  cg->dir = dir;
  return true;
}

TEST(SparrowdSqueezeTest, TheCacheGivesWayToAHogAndComesBack) {
  TestCgroup cleanup;
  std::string skip;
  if (!MakeTestCgroup("squeeze-test", &cleanup, &skip)) GTEST_SKIP() << skip;
  const std::string& dir = cleanup.dir;
  const std::string model = SqueezeModel();
  ASSERT_FALSE(model.empty());

  SparrowdProcess::Options o;
  // The KV pool as configured holds 8 full contexts (256 blocks of 512 KiB); the streams touch
  // about 90 of them. Under the budget it may shrink to one context (32 blocks).
  o.args = {"--model", model, "--port", "0", "--grpc-port", "-1", "--threads", "2", "--cache-mb",
            "64", "--max-running", "8", "--n-ctx", "512",
            // The device's own sources: the cgroup is what this test is about.
            "--memory-pressure", "1",
            // Every budget planned by the Z3 planner, as on a device that ran profile-hw.
            "--hw-profile", testing::WriteHardwareProfile()};
  o.cgroup_procs = dir + "/cgroup.procs";
  std::string error;
  auto p = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  ASSERT_NE(p, nullptr) << error;
  const int port = p->http_port();
  ASSERT_NE(p->Stdout().find("watching cgroup v1 pressure events"), std::string::npos)
      << p->Stdout();

  const std::vector<std::string> prompts = {"a b c", "d e",   "f g h i", "j",
                                            "k l",   "m n o", "p q",     "r s t"};
  auto request = [](const std::string& prompt) {
    // 160 tokens: the squeezed run still lasts several times the hog's growth (about 4 s), and
    // the test takes about 60 s rather than 110 (it runs alone: RUN_SERIAL).
    return json{{"prompt", prompt}, {"max_tokens", 160}, {"temperature", 0}}.dump();
  };
  auto run_all = [&] {
    std::vector<std::future<std::string>> f;
    for (const std::string& pr : prompts) {
      f.push_back(std::async(std::launch::async,
                             [&, pr] { return Post(port, "/v1/completions", request(pr)); }));
    }
    std::vector<std::string> texts;
    for (auto& x : f) {
      const json b = Body(x.get());
      // Complete: its whole answer, ended by the length asked for or the end of text.
      const bool complete =
          b.contains("choices") && (b["choices"][0]["finish_reason"] == "length" ||
                                    b["choices"][0]["finish_reason"] == "stop");
      texts.push_back(complete ? b["choices"][0]["text"].get<std::string>()
                               : "<failed: " + b.dump() + ">");
    }
    return texts;
  };
  // Unpressed: the reference outputs, and a full cache.
  const int64_t rss_start = p->ResidentBytes();
  const std::vector<std::string> reference = run_all();
  for (const std::string& r : reference) ASSERT_EQ(r.rfind("<failed", 0), std::string::npos) << r;
  const int64_t rss_full = p->ResidentBytes();
  const std::string full_metrics = Get(port, "/metrics");
  const double budget_full =
      Gauge(full_metrics, "sparrow_memory_budget_bytes\\{consumer=\"neuron_cache\"\\}");
  // Unpressed, the whole cache and a KV pool over its floor (the planner, once it has learnt the
  // predictor's share, may trade some KV for nothing else: the cache is whole already).
  ASSERT_EQ(budget_full, 64.0 * (1 << 20)) << p->Stdout();
  const double kv_full = Gauge(full_metrics, "sparrow_kv_blocks_total");
  ASSERT_GT(kv_full, 64) << p->Stdout();

  // The limit leaves 32 MiB over what the cgroup holds now; the hog wants that, what the KV pool
  // holds over its least (one context, 16 MiB), and a quarter of what the neuron cache holds,
  // at 10 MB/s: it gets it only if both give way. (The KV pool alone, shrunk first, would do
  // for a hog of 32 MiB and a quarter of the cache.)
  const double resident = Gauge(Get(port, "/metrics"), "sparrow_neuron_cache_resident_bytes");
  ASSERT_GT(resident, 16 << 20);
  const int64_t kv_touched =
      std::max<int64_t>(0, rss_full - rss_start - static_cast<int64_t>(resident));
  const int hog_mib = 32 + static_cast<int>(std::max<int64_t>(0, kv_touched - (16 << 20)) >> 20) +
                      static_cast<int>(resident / 4 / (1 << 20));
  const int64_t usage = ReadNumber(dir + "/memory.usage_in_bytes");
  std::ofstream(dir + "/memory.limit_in_bytes") << usage + (int64_t{32} << 20);
  std::promise<void> hog_may_leave;
  std::shared_future<void> leave = hog_may_leave.get_future().share();
  int hog_pipe[2];
  ASSERT_EQ(pipe(hog_pipe), 0);
  const pid_t hog = fork();
  ASSERT_GE(hog, 0);
  if (hog == 0) {
    close(hog_pipe[1]);
    std::ofstream(dir + "/cgroup.procs") << getpid();
    for (int i = 0; i < hog_mib; ++i) {
      void* m = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED) _exit(2);
      std::memset(m, 1, 1 << 20);
      usleep(100000);
    }
    char c;
    (void)!read(hog_pipe[0], &c, 1);  // hold the memory until told
    _exit(0);
  }
  close(hog_pipe[0]);
  signal(SIGPIPE, SIG_IGN);  // the hog may be gone when it is told to leave
  // The lowest budget and RSS while the streams run (the cache grows back once it is quiet).
  std::atomic<bool> sampling{true};
  double budget_squeezed = budget_full, kv_squeezed = kv_full;
  int64_t rss_squeezed = rss_full;
  std::thread sampler([&] {
    while (sampling) {
      const std::string m = Get(port, "/metrics");
      budget_squeezed = std::min(
          budget_squeezed, Gauge(m, "sparrow_memory_budget_bytes\\{consumer=\"neuron_cache\"\\}"));
      const double kv = Gauge(m, "sparrow_kv_blocks_total");
      if (kv > 0) kv_squeezed = std::min(kv_squeezed, kv);
      const int64_t rss = p->ResidentBytes();
      if (rss > 0) rss_squeezed = std::min(rss_squeezed, rss);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  const std::vector<std::string> squeezed = run_all();
  sampling = false;
  sampler.join();
  // Let the hog finish growing, then look.
  for (int i = 0; i < 200; ++i) {
    if (ReadNumber("/proc/" + std::to_string(hog) + "/statm") < 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const int64_t oom = OomKills(dir);
  EXPECT_EQ(oom, 0) << "nothing was OOM-killed";
  int hog_status = 0;
  const bool hog_alive = waitpid(hog, &hog_status, WNOHANG) == 0;
  EXPECT_TRUE(hog_alive) << "the hog got its memory";
  EXPECT_FALSE(p->Wait(std::chrono::milliseconds(0)).has_value()) << "sparrowd still serves";
  // Every stream completes. Their text is not asserted equal to the unpressed run's: preempted
  // streams decode in smaller batches, and a PowerInfer layer that a batch uses mostly is
  // computed whole (SparseFfn::MixedBatch) where a small batch's is gathered row by row, so the
  // sums round differently and a greedy choice between two near-equal logits can flip (one
  // stream of eight, in one of about a dozen runs in session 16). How many match is printed.
  int same = 0, completed = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    same += squeezed[i] == reference[i];
    completed += squeezed[i].rfind("<failed", 0) != 0;
  }
  EXPECT_EQ(completed, static_cast<int>(reference.size())) << "every stream completed";
  for (size_t i = 0; i < reference.size(); ++i) {
    if (squeezed[i] == reference[i]) continue;
    size_t at = 0;
    while (at < reference[i].size() && at < squeezed[i].size() &&
           reference[i][at] == squeezed[i][at]) {
      ++at;
    }
    std::printf("stream %zu differs from character %zu of %zu: unpressed \"%s\", squeezed \"%s\"\n",
                i, at, reference[i].size(), reference[i].substr(at, 60).c_str(),
                squeezed[i].substr(at, 60).c_str());
  }
  if (::testing::Test::HasFailure()) {
    std::istringstream log(p->Stdout());
    for (std::string line; std::getline(log, line);) {
      if (line.find("memory") != std::string::npos) std::printf("%s\n", line.c_str());
    }
  }
  EXPECT_LT(budget_squeezed, budget_full);
  EXPECT_LT(kv_squeezed, kv_full) << "the KV pool shrank";
  EXPECT_LT(rss_squeezed, rss_full - (int64_t{8} << 20)) << "the cache's memory went back";
  std::printf(
      "[squeeze] hog %d MiB; sparrowd rss %.1f -> %.1f MiB, cache budget %.0f -> %.0f MiB, "
      "KV blocks %.0f -> %.0f, resident %.1f MiB before, oom kills %lld, %d of %zu streams "
      "the same as unpressed\n",
      hog_mib, rss_full / 1048576.0, rss_squeezed / 1048576.0, budget_full / 1048576.0,
      budget_squeezed / 1048576.0, kv_full, kv_squeezed, resident / 1048576.0,
      static_cast<long long>(oom), same, reference.size());

  // The hog leaves; after the quiet spell the cache grows back.
  (void)!write(hog_pipe[1], "x", 1);
  close(hog_pipe[1]);
  waitpid(hog, &hog_status, 0);
  std::ofstream(dir + "/memory.limit_in_bytes") << -1;
  double budget_after = budget_squeezed;
  for (int i = 0; i < 300 && budget_after <= budget_squeezed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    budget_after =
        Gauge(Get(port, "/metrics"), "sparrow_memory_budget_bytes\\{consumer=\"neuron_cache\"\\}");
  }
  EXPECT_GT(budget_after, budget_squeezed) << "growing back once quiet";
  // The planner planned the budgets once it was quiet with room for its solver, not under the
  // squeeze (its heap would have come from the hog's share).
  std::string log = p->Stdout();
  for (int i = 0; i < 300 && log.find("memory: plan for ") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    log = p->Stdout();
  }
  EXPECT_NE(log.find("memory: plan for "), std::string::npos) << log;
  std::printf("[squeeze] %s\n",
              log.find("memory: plan for ") == std::string::npos
                  ? "never planned"
                  : log.substr(log.find("memory: plan for ")).substr(0, 160).c_str());
  p->Signal(SIGKILL);
  p->Wait(std::chrono::seconds(5));
}

// With no --n-ctx, a model trained for 1048576 positions (256 bytes of KV each in the default
// f16 cache: 256 MiB for one request) started in a 128 MiB cgroup serves a context whose KV fits
// beside the rest, and its memory budget starts and stays within the limit; a request beyond that
// context is refused naming it.
TEST(SparrowdSqueezeTest, WithoutNCtxTheContextAndTheBudgetFitTheCgroup) {
  TestCgroup cg;
  std::string skip;
  if (!MakeTestCgroup("fit-test", &cg, &skip)) GTEST_SKIP() << skip;
  constexpr int64_t kLimit = int64_t{128} << 20;
  std::ofstream(cg.dir + "/memory.limit_in_bytes") << kLimit;
  testing::LlamaModelSpec spec;
  spec.n_ctx = 1u << 20;
  const int64_t kv_per_token =
      2 * spec.n_layer * spec.n_head_kv * (spec.n_embd / spec.n_head) * 2;  // f16 keys and values
  const std::string model = testing::TempPath("fit-long-context.gguf");
  ASSERT_TRUE(testing::WriteLlamaModel(spec, model).ok());

  SparrowdProcess::Options o;
  o.args = {"--model", model, "--port", "0", "--grpc-port", "-1", "--threads", "1"};
  o.cgroup_procs = cg.dir + "/cgroup.procs";
  std::string error;
  auto p = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  ASSERT_NE(p, nullptr) << error;
  std::smatch fit;
  const std::string log = p->Stdout();
  ASSERT_TRUE(std::regex_search(log, fit, std::regex("n_ctx ([0-9]+) to fit the device"))) << log;
  const int64_t n_ctx = std::stoll(fit[1]);
  EXPECT_LT(n_ctx, int64_t{1} << 20);
  EXPECT_GE(n_ctx, 4096) << "most of the limit is left for it";
  EXPECT_EQ(n_ctx % 256, 0);
  EXPECT_LE(n_ctx * kv_per_token, kLimit / 2) << "one request's KV takes at most half";
  EXPECT_NE(log.find("needs 256 MiB of KV; the device offers 128 MiB"), std::string::npos) << log;

  const std::string metrics = Get(p->http_port(), "/metrics");
  const double total = Gauge(metrics, "sparrow_memory_budget_bytes\\{consumer=\"total\"\\}");
  EXPECT_GT(total, 0) << metrics;
  EXPECT_LE(total, static_cast<double>(kLimit)) << "the first budget is within the limit";
  EXPECT_LE(Gauge(metrics, "sparrow_memory_ceiling_bytes"), static_cast<double>(kLimit));
  EXPECT_LE(Gauge(metrics, "sparrow_memory_floor_bytes"), static_cast<double>(kLimit));
  EXPECT_GT(Gauge(metrics, "sparrow_memory_budget_bytes\\{consumer=\"process\"\\}"), 0);

  json b = Body(Post(p->http_port(), "/v1/completions",
                     json{{"prompt", "a b c"}, {"max_tokens", 8}, {"temperature", 0}}.dump()));
  ASSERT_TRUE(b.contains("choices")) << b.dump();
  EXPECT_EQ(b["choices"][0]["finish_reason"], "length");
  b = Body(Post(p->http_port(), "/v1/completions",
                json{{"prompt", "a b c"}, {"max_tokens", n_ctx + 1}}.dump()));
  EXPECT_NE(b.dump().find("maximum context length is " + std::to_string(n_ctx)), std::string::npos)
      << b.dump();
  p->Signal(SIGKILL);
  p->Wait(std::chrono::seconds(5));
}

}  // namespace
}  // namespace sparrow
