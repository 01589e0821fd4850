// Collaborative inference as a user runs it: worker sparrowds (--worker) and a coordinator
// (--workers) as real processes on loopback. Greedy output across two and three workers equals
// one device's, for the llama family and the newer ones; a worker with another file, a
// coordinator without the worker key or certificate and a stalled worker each end as a clear
// error; the requests of a killed worker, and those arriving before the layers are placed again,
// wait and run; a worker that comes back is taken in again.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/memory/pressure_source.h"
#include "sparrow/shard/v1/shard.grpc.pb.h"
#include "tests/util/sparrowd_process.h"
#include "tests/util/synthetic_llama.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using testing::SparrowdProcess;
namespace shardpb = ::sparrow::shard::v1;

constexpr const char* kKey = "shard-test-admin-key-0123456789";
constexpr const char* kWorkerKey = "shard-test-worker-key-abcdef012345";

// A worker key file holding `key`, written once per key.
std::string KeyFile(const std::string& key) {
  const std::string path =
      testing::TempPath("worker-key-" + std::to_string(std::hash<std::string>{}(key)));
  std::ofstream(path) << key << "\n";
  chmod(path.c_str(), 0600);
  return path;
}

// The peak resident memory of a process (VmHWM), -1 when it cannot be read.
int64_t PeakBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

struct Reply {
  int status = 0;
  nlohmann::json body;
};

// Set: the coordinator serves HTTPS with this certificate (a coordinator with TLS for its
// workers), and the requests go through curl trusting it.
std::string g_https_ca;

// One HTTP exchange with the coordinator: the raw response, status line first.
std::string Exchange(int port, const std::string& method, const std::string& path,
                     const std::string& headers, const std::string& body) {
  if (g_https_ca.empty()) {
    return testing::RawExchange(
        "127.0.0.1", port,
        method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + "Connection: close\r\n" +
            headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  }
  const std::string file = testing::TempPath("shard-body.json");
  std::ofstream(file) << body;
  std::string h;
  for (size_t at = 0, end; (end = headers.find("\r\n", at)) != std::string::npos; at = end + 2) {
    h += " -H '" + headers.substr(at, end - at) + "'";
  }
  return testing::RunCommand("curl -s -i --http1.1 --cacert " + g_https_ca + h + " -X " + method +
                             (method == "POST" ? " --data-binary @" + file : "") +
                             " https://127.0.0.1:" + std::to_string(port) + path)
      .out;
}

Reply Post(int port, const std::string& path, const nlohmann::json& body) {
  const std::string raw =
      Exchange(port, "POST", path, "Content-Type: application/json\r\n", body.dump());
  Reply r;
  r.status = testing::StatusOf(raw);
  const size_t head = raw.find("\r\n\r\n");
  if (head != std::string::npos) {
    r.body = nlohmann::json::parse(raw.substr(head + 4), nullptr, false);
  }
  return r;
}

// GET /admin/v1/shards with the admin key; not an object when it fails.
nlohmann::json Shards(int port) {
  const std::string raw = Exchange(port, "GET", "/admin/v1/shards",
                                   std::string("Authorization: Bearer ") + kKey + "\r\n", "");
  if (testing::StatusOf(raw) != 200) return nullptr;
  return nlohmann::json::parse(raw.substr(raw.find("\r\n\r\n") + 4), nullptr, false);
}

std::unique_ptr<SparrowdProcess> Start(std::vector<std::string> args, std::string* error) {
  SparrowdProcess::Options o;
  o.args = std::move(args);
  return SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, error);
}

std::unique_ptr<SparrowdProcess> StartWorker(const std::string& model, int port = 0,
                                             const std::string& key = kWorkerKey) {
  std::string error;
  auto w = Start({"--worker", "--model", model, "--grpc-port", std::to_string(port),
                  "--worker-key-file", KeyFile(key), "--admin-key", kKey, "--threads", "1"},
                 &error);
  EXPECT_NE(w, nullptr) << error;
  return w;
}

std::string Workers(const std::vector<std::unique_ptr<SparrowdProcess>>& ws) {
  std::string out;
  for (const auto& w : ws) {
    if (!out.empty()) out += ",";
    out += "127.0.0.1:" + std::to_string(w->grpc_port());
  }
  return out;
}

std::vector<std::string> CoordinatorArgs(const std::string& model, const std::string& workers,
                                         const std::string& layers,
                                         const std::string& key = kWorkerKey) {
  return {"--model",
          model,
          "--worker-key-file",
          KeyFile(key),
          "--port",
          "0",
          "--grpc-port",
          "-1",
          "--threads",
          "1",
          "--admin-key",
          kKey,
          "--workers",
          workers,
          "--shard-layers",
          layers,
          "--worker-timeout-ms",
          "1500"};
}

// Three requests: two sharing a prompt's beginning (the second reuses its KV blocks) and one
// asking for two choices (a fork).
std::vector<std::string> Texts(int port) {
  std::vector<std::string> out;
  for (const char* prompt : {"Once upon a time, there was", "Once upon a time, there was a dog"}) {
    Reply r =
        Post(port, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 24}, {"temperature", 0}});
    EXPECT_EQ(r.status, 200) << r.body.dump();
    if (r.status == 200) out.push_back(r.body["choices"][0]["text"]);
  }
  Reply r = Post(
      port, "/v1/completions",
      {{"prompt", "The cat"}, {"max_tokens", 16}, {"n", 2}, {"temperature", 0.8}, {"seed", 11}});
  EXPECT_EQ(r.status, 200) << r.body.dump();
  if (r.status == 200) {
    for (const auto& c : r.body["choices"]) out.push_back(c["text"]);
  }
  return out;
}

std::string Stories() {
  return testing::ModelPath("stories260K.gguf");
}

std::vector<std::unique_ptr<SparrowdProcess>> TwoWorkers() {
  std::vector<std::unique_ptr<SparrowdProcess>> ws;
  ws.push_back(StartWorker(Stories()));
  ws.push_back(StartWorker(Stories()));
  return ws;
}

// The reference: the same model on one device.
std::vector<std::string> Alone(const std::string& model) {
  std::string error;
  auto one =
      Start({"--model", model, "--port", "0", "--grpc-port", "-1", "--threads", "1"}, &error);
  EXPECT_NE(one, nullptr) << error;
  return one ? Texts(one->http_port()) : std::vector<std::string>{};
}

TEST(SparrowdShardTest, TwoAndThreeWorkersGenerateWhatOneDeviceDoes) {
  // stories260K has 5 layers: this device keeps 1, the workers share the rest.
  const std::vector<std::string> alone = Alone(Stories());
  ASSERT_EQ(alone.size(), 4u);
  for (const std::string layers : {"1,2,2", "1,2,1,1"}) {
    std::vector<std::unique_ptr<SparrowdProcess>> ws;
    const size_t n_workers = std::count(layers.begin(), layers.end(), ',');
    for (size_t i = 0; i < n_workers; ++i) ws.push_back(StartWorker(Stories()));
    ASSERT_TRUE(std::all_of(ws.begin(), ws.end(), [](const auto& w) { return w != nullptr; }));
    std::string error;
    auto coord = Start(CoordinatorArgs(Stories(), Workers(ws), layers), &error);
    ASSERT_NE(coord, nullptr) << error;
    EXPECT_EQ(Texts(coord->http_port()), alone) << "layers " << layers;
    EXPECT_NE(coord->Stdout().find("layers placed across devices"), std::string::npos);
    // Each worker's link was measured (round trip and bandwidth, through Echo).
    EXPECT_NE(coord->Stdout().find("Mbit/s"), std::string::npos) << coord->Stdout();
    // The placement and each link's counters, for the operator.
    const nlohmann::json shards = Shards(coord->http_port());
    ASSERT_TRUE(shards.is_object()) << shards.dump();
    ASSERT_EQ(shards["placement"].size(), n_workers + 1) << shards.dump();
    EXPECT_EQ(shards["placement"][0]["device"], "this device");
    EXPECT_EQ(shards["placement"][1]["first_layer"], 1);
    ASSERT_EQ(shards["links"].size(), n_workers);
    for (const auto& link : shards["links"]) {
      EXPECT_TRUE(link["connected"].get<bool>()) << link.dump();
      EXPECT_GT(link["steps"].get<int64_t>(), 20) << link.dump();
      EXPECT_EQ(link["failures"], 0) << link.dump();
      EXPECT_GT(link["bytes_received"].get<int64_t>(), 0) << link.dump();
    }
    for (const auto& w : ws) {
      EXPECT_NE(w->Stdout().find("assigned layers"), std::string::npos) << w->Stdout();
    }
  }
}

// Clients at once: their steps are batches that flow through the devices as micro-batches
// (prompt chunks cut in parts), and each still gets what one device generates for it alone.
TEST(SparrowdShardTest, ConcurrentClientsThroughThePipelineGetWhatOneDeviceGives) {
  const std::vector<std::string> prompts = {"Once upon a time", "The little bird", "Lily and Ben",
                                            "One day, a big", "The sun was"};
  auto run = [&](int port) {
    std::vector<std::string> out(prompts.size());
    std::vector<std::thread> clients;
    for (size_t i = 0; i < prompts.size(); ++i) {
      clients.emplace_back([&, i] {
        Reply r = Post(port, "/v1/completions",
                       {{"prompt", prompts[i]}, {"max_tokens", 20}, {"temperature", 0}});
        EXPECT_EQ(r.status, 200) << r.body.dump();
        if (r.status == 200) out[i] = r.body["choices"][0]["text"];
      });
    }
    for (auto& c : clients) c.join();
    return out;
  };
  std::vector<std::string> alone;
  {
    std::string error;
    auto one =
        Start({"--model", Stories(), "--port", "0", "--grpc-port", "-1", "--threads", "1"}, &error);
    ASSERT_NE(one, nullptr) << error;
    // Each prompt on its own: no batch at all.
    for (const auto& p : prompts) {
      Reply r = Post(one->http_port(), "/v1/completions",
                     {{"prompt", p}, {"max_tokens", 20}, {"temperature", 0}});
      ASSERT_EQ(r.status, 200) << r.body.dump();
      alone.push_back(r.body["choices"][0]["text"]);
    }
  }
  auto ws = TwoWorkers();
  ASSERT_TRUE(ws[0] && ws[1]);
  std::string error;
  std::vector<std::string> args = CoordinatorArgs(Stories(), Workers(ws), "2,2,1");
  args.insert(args.end(), {"--shard-micro-batches", "4"});
  auto coord = Start(args, &error);
  ASSERT_NE(coord, nullptr) << error;
  EXPECT_EQ(run(coord->http_port()), alone);
  EXPECT_NE(
      coord->Stdout().find("pipeline: 3 batches in flight, a lone batch cut in 4 micro-batches"),
      std::string::npos)
      << coord->Stdout();
}

TEST(SparrowdShardTest, NewerFamiliesAcrossTwoWorkers) {
  // (file, layers per device): with two layers the coordinator keeps only the embedding and the
  // output; gemma3's six put its sliding-window and global layers on different devices.
  const std::vector<std::pair<std::string, std::string>> cases = {{"synth-llama3rope-f32", "0,1,1"},
                                                                  {"synth-qwen3-f32", "0,1,1"},
                                                                  {"synth-gemma3-f32", "1,3,2"},
                                                                  {"synth-qwen3moe-f32", "0,1,1"}};
  for (const auto& [name, layers] : cases) {
    const std::string model = testing::SharedDir() + "/arch/models/" + name + ".gguf";
    if (!std::ifstream(model)) GTEST_SKIP() << model << " absent";
    const std::vector<std::string> alone = Alone(model);
    std::vector<std::unique_ptr<SparrowdProcess>> ws;
    ws.push_back(StartWorker(model));
    ws.push_back(StartWorker(model));
    std::string error;
    auto coord = Start(CoordinatorArgs(model, Workers(ws), layers), &error);
    ASSERT_NE(coord, nullptr) << error;
    EXPECT_EQ(Texts(coord->http_port()), alone) << name;
  }
}

// --shard-split auto on a model whose layers take less than a round trip: the planners
// predict that the tensor split's exchanges cost more than they save, and whole layers stay
// (on this device, unless its measured times say otherwise).
TEST(SparrowdShardTest, AutoKeepsATinyModelOnThisDevice) {
  std::vector<std::unique_ptr<SparrowdProcess>> ws;
  ws.push_back(StartWorker(Stories()));
  ASSERT_NE(ws[0], nullptr);
  std::vector<std::string> args = CoordinatorArgs(Stories(), Workers(ws), "");
  args.insert(args.end(), {"--shard-split", "auto"});
  std::string error;
  auto coord = Start(args, &error);
  ASSERT_NE(coord, nullptr) << error;
  const nlohmann::json s = Shards(coord->http_port());
  ASSERT_GE(s["placement"].size(), 1u) << s.dump();
  EXPECT_EQ(s["placement"][0]["device"], "this device");
  for (const auto& p : s["placement"]) {
    EXPECT_TRUE(p["slice"].get<std::string>().empty()) << s.dump();
  }
  EXPECT_EQ(Texts(coord->http_port()), Alone(Stories()));
}

// Galaxy's tensor split: every device computes a slice of every layer (its heads and neurons,
// cut by its measured speed); the coordinator adds the partial sums. Greedy output equals one
// device's; a family whose layers cannot be cut (experts) is refused naming why.
TEST(SparrowdShardTest, ATensorSplitOverTwoWorkersGeneratesWhatOneDeviceDoes) {
  std::vector<std::string> models = {Stories()};
  for (const char* name : {"synth-gemma3-f32", "synth-qwen3moe-f32"}) {
    const std::string m = testing::SharedDir() + "/arch/models/" + name + ".gguf";
    if (std::ifstream(m)) models.push_back(m);
  }
  for (const std::string& model : models) {
    std::vector<std::unique_ptr<SparrowdProcess>> ws;
    ws.push_back(StartWorker(model));
    ws.push_back(StartWorker(model));
    ASSERT_TRUE(ws[0] && ws[1]);
    std::vector<std::string> args = CoordinatorArgs(model, Workers(ws), "");
    args.insert(args.end(), {"--shard-split", "tensor"});
    std::find(args.begin(), args.end(), "-1")->assign(1, '0');  // a gRPC port, for sparrowctl
    std::string error;
    auto coord = Start(args, &error);
    if (model.find("moe") != std::string::npos) {
      EXPECT_EQ(coord, nullptr);
      EXPECT_NE(error.find("experts"), std::string::npos) << error;
      continue;
    }
    ASSERT_NE(coord, nullptr) << error;
    const std::vector<std::string> alone = Alone(model);
    EXPECT_EQ(Texts(coord->http_port()), alone) << model;
    EXPECT_NE(coord->Stdout().find("tensor split: every layer's attention and FFN cut over 3"),
              std::string::npos)
        << coord->Stdout();
    // Every device was profiled for decode and for prompts (per token of a chunk).
    const std::string log = coord->Stdout();
    const std::regex profiled(
        R"(ms per token for all of them \(([0-9.]+) per token of a prompt\))");
    int devices = 0;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), profiled);
         it != std::sregex_iterator(); ++it, ++devices) {
      EXPECT_GT(std::stod((*it)[1]), 0.0) << it->str();
    }
    EXPECT_EQ(devices, 3) << log;
    const nlohmann::json shards = Shards(coord->http_port());
    ASSERT_TRUE(shards.is_object()) << shards.dump();
    ASSERT_EQ(shards["placement"].size(), 3u) << shards.dump();
    for (const auto& p : shards["placement"]) {
      EXPECT_EQ(p["first_layer"], 0) << p.dump();
      EXPECT_NE(p["slice"].get<std::string>().find("neurons"), std::string::npos) << p.dump();
    }
    ASSERT_EQ(shards["links"].size(), 2u);
    for (const auto& link : shards["links"]) {
      EXPECT_EQ(link["failures"], 0) << link.dump();
      EXPECT_GT(link["steps"].get<int64_t>(), 100) << link.dump();  // two per layer and step
    }
    for (const auto& w : ws) {
      EXPECT_NE(w->Stdout().find("a slice of each"), std::string::npos) << w->Stdout();
    }
    // The operator's view from the laptop: sparrowctl over gRPC.
    const auto ctl = testing::RunCommand(
        "SPARROW_CTL_CONFIG=/dev/null SPARROW_ADMIN_KEY=" + std::string(kKey) + " " + SPARROWCTL +
        " --port " + std::to_string(coord->grpc_port()) + " shards");
    EXPECT_EQ(ctl.exit_code, 0) << ctl.out;
    EXPECT_NE(ctl.out.find("this device"), std::string::npos) << ctl.out;
    EXPECT_NE(ctl.out.find("connected"), std::string::npos) << ctl.out;
    EXPECT_NE(ctl.out.find("slice of each layer: kv heads"), std::string::npos) << ctl.out;
    EXPECT_NE(ctl.out.find("tensor split: every layer's"), std::string::npos) << ctl.out;
  }
}

// A worker whose memory budget shrinks (its cgroup's limit lowered, as a phone's would be) is
// planned for again: the tensor split gives it the share its memory still holds. Needs root and
// a cgroup v1 memory controller (skipped elsewhere, with the reason).
TEST(SparrowdShardTest, AWorkerWhoseBudgetShrinksGetsASmallerSlice) {
  const std::string ours = FindMemoryCgroupV1();
  if (ours.empty()) GTEST_SKIP() << "no cgroup v1 memory controller here";
  const std::string dir = ours + "/sparrow-shard-budget-test-" + std::to_string(getpid());
  if (mkdir(dir.c_str(), 0755) != 0) {
    GTEST_SKIP() << "cannot create a cgroup under " << ours << ": " << std::strerror(errno);
  }
  // A model of 240 MB (q8_0), so that a limit the worker lives under still binds its slice.
  testing::LlamaModelSpec spec;
  spec.weight_type = spec.embd_type = spec.output_type = TensorType::kQ8_0;
  spec.n_embd = 1024;
  spec.n_head = 8;
  spec.n_head_kv = 8;
  spec.n_ff = 8192;
  spec.n_layer = 8;
  spec.n_ctx = 512;
  spec.vocab = testing::LlamaModelSpec::Vocab::kStories260K;
  const std::string model = testing::TempPath("shard-budget.gguf");
  ASSERT_TRUE(testing::WriteLlamaModel(spec, model).ok());
  std::unique_ptr<SparrowdProcess> worker;
  {
    SparrowdProcess::Options o;
    o.args = {"--worker",          "--model",          model, "--grpc-port", "0", "--threads", "1",
              "--worker-key-file", KeyFile(kWorkerKey)};
    o.cgroup_procs = dir + "/cgroup.procs";
    std::string error;
    worker = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
    ASSERT_NE(worker, nullptr) << error;
  }
  struct Cleanup {
    std::string dir, model;
    std::unique_ptr<SparrowdProcess>* worker;
    ~Cleanup() {
      worker->reset();
      rmdir(dir.c_str());
      unlink(model.c_str());
    }
  } cleanup{dir, model, &worker};
  std::vector<std::string> args =
      CoordinatorArgs(model, "127.0.0.1:" + std::to_string(worker->grpc_port()), "");
  args.insert(args.end(), {"--shard-split", "tensor", "--n-ctx", "256"});
  std::string error;
  auto coord = Start(args, &error);
  ASSERT_NE(coord, nullptr) << error;
  auto worker_neurons = [&](const nlohmann::json& s) {
    // "kv heads A..B, neurons C..D": D - C + 1.
    const std::string slice = s["placement"][1]["slice"];
    const size_t at = slice.find("neurons ");
    const int64_t c = std::stoll(slice.substr(at + 8));
    const int64_t d = std::stoll(slice.substr(slice.find("..", at) + 2));
    return d - c + 1;
  };
  nlohmann::json s = Shards(coord->http_port());
  ASSERT_EQ(s["placement"].size(), 2u) << s.dump();
  const int64_t before = worker_neurons(s);
  // About half: the devices are alike; less when the loopback link measured slow under load
  // (28% seen with both cores busy).
  EXPECT_GT(before, 8192 / 5) << s.dump();

  // 40 MiB: the worker may hold about a seventh of the model's layers now.
  std::ofstream(dir + "/memory.limit_in_bytes") << (40 << 20);
  for (int i = 0; i < 300 && Shards(coord->http_port())["replans"] != 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  s = Shards(coord->http_port());
  ASSERT_EQ(s["replans"], 1) << s.dump() << coord->Stdout();
  EXPECT_LT(worker_neurons(s), 8192 / 6) << s.dump();
  EXPECT_LT(worker_neurons(s), before) << s.dump();
  EXPECT_NE(coord->Stdout().find("offers 35 MiB (was "), std::string::npos) << coord->Stdout();
  // And it serves on the new slices.
  Reply r = Post(coord->http_port(), "/v1/completions",
                 {{"prompt", "Once upon a time"}, {"max_tokens", 4}, {"temperature", 0}});
  EXPECT_EQ(r.status, 200) << r.body.dump();
  s = Shards(coord->http_port());
  EXPECT_EQ(s["links"][0]["failures"], 0) << s.dump();
}

// Devices as on a LAN: each worker in its own network namespace, joined to this one by a veth
// pair shaped by tbf to 100 Mbit/s, reached at its own address. The pipeline and the tensor split
// both give one device's output. Needs root and iproute2 (skipped elsewhere, with the reason).
TEST(SparrowdShardTest, WorkersInTheirOwnNetworkNamespaces) {
  std::string ip;
  for (const char* p : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
    if (access(p, X_OK) == 0) {
      ip = p;
      break;
    }
  }
  if (geteuid() != 0 || ip.empty()) GTEST_SKIP() << "needs root and iproute2 (ip)";
  const std::string tag = std::to_string(getpid() % 100000);
  const std::string octet = std::to_string(getpid() % 250 + 1);
  struct Namespaces {
    std::vector<std::string> names;
    ~Namespaces() {
      for (const auto& n : names) (void)testing::RunCommand("ip netns del " + n + " 2>&1");
    }
  } made;
  // Off loopback the link needs TLS: one certificate for the devices, naming both addresses.
  const std::string certs = testing::TempPath("shard_netns_tls");
  const auto certs_made =
      testing::RunCommand("mkdir -p " + certs + " && " + std::string(SPARROWCTL) + " cert --out " +
                          certs + " --ip 10.231." + octet + ".2 --ip 10.232." + octet + ".2");
  ASSERT_EQ(certs_made.exit_code, 0) << certs_made.out;
  const std::vector<std::string> tls = {"--tls-cert", certs + "/sparrow.crt", "--tls-key",
                                        certs + "/sparrow.key"};
  std::vector<std::unique_ptr<SparrowdProcess>> ws;
  std::string workers;
  for (int i = 1; i <= 2; ++i) {
    const std::string ns = "sparrow-t" + tag + "-" + std::to_string(i);
    const std::string here = "vs" + tag + "-" + std::to_string(i);
    const std::string there = "vw" + tag + "-" + std::to_string(i);
    const std::string net = "10." + std::to_string(230 + i) + "." + octet + ".";
    const auto r = testing::RunCommand("ip netns add " + ns + " 2>&1");
    if (r.exit_code != 0) GTEST_SKIP() << "cannot make a network namespace: " << r.out;
    made.names.push_back(ns);
    const auto link = testing::RunCommand(
        "set -e; ip link add " + here + " type veth peer name " + there + " netns " + ns +
        "; ip addr add " + net + "1/24 dev " + here + "; ip link set " + here + " up; ip -n " + ns +
        " addr add " + net + "2/24 dev " + there + "; ip -n " + ns + " link set " + there +
        " up; ip -n " + ns + " link set lo up 2>&1");
    ASSERT_EQ(link.exit_code, 0) << link.out;
    // A LAN's bandwidth where tc has tbf (the link works without it).
    (void)testing::RunCommand("tc qdisc add dev " + here +
                              " root tbf rate 100mbit burst 64kb latency 50ms 2>&1");
    SparrowdProcess::Options o;
    o.args = {"netns",
              "exec",
              ns,
              SparrowdProcess::Binary(SPARROWD),
              "--worker",
              "--model",
              Stories(),
              "--host",
              net + "2",
              "--grpc-port",
              "50061",
              "--worker-key-file",
              KeyFile(kWorkerKey),
              "--threads",
              "1"};
    o.args.insert(o.args.end(), tls.begin(), tls.end());
    std::string error;
    ws.push_back(SparrowdProcess::Start(ip, o, &error));
    ASSERT_NE(ws.back(), nullptr) << error;
    workers += (workers.empty() ? "" : ",") + net + "2:50061";
  }
  const std::vector<std::string> alone = Alone(Stories());
  // With TLS for its workers the coordinator serves HTTPS too.
  g_https_ca = certs + "/sparrow.crt";
  struct Plain {
    ~Plain() { g_https_ca.clear(); }
  } plain;
  for (const bool tensor : {false, true}) {
    std::vector<std::string> args = CoordinatorArgs(Stories(), workers, tensor ? "" : "1,2,2");
    if (tensor) args.insert(args.end(), {"--shard-split", "tensor"});
    args.insert(args.end(), tls.begin(), tls.end());
    std::string error;
    auto coord = Start(args, &error);
    ASSERT_NE(coord, nullptr) << error;
    EXPECT_EQ(Texts(coord->http_port()), alone) << "tensor " << tensor;
    const nlohmann::json s = Shards(coord->http_port());
    ASSERT_EQ(s["links"].size(), 2u) << s.dump();
    for (const auto& link : s["links"]) {
      EXPECT_EQ(link["failures"], 0) << link.dump();
      EXPECT_NE(link["address"].get<std::string>().find("10.23"), std::string::npos);
    }
  }
  // shard_encoding auto: the links measure about 100 Mbit/s, below a gigabit, so q8_0 goes on
  // the wire (its output may differ from one device's in the last bits: not compared).
  std::vector<std::string> args = CoordinatorArgs(Stories(), workers, "1,2,2");
  args.insert(args.end(), {"--shard-encoding", "auto"});
  args.insert(args.end(), tls.begin(), tls.end());
  std::string error;
  auto coord = Start(args, &error);
  ASSERT_NE(coord, nullptr) << error;
  Reply r = Post(coord->http_port(), "/v1/completions",
                 {{"prompt", "Once upon a time"}, {"max_tokens", 8}, {"temperature", 0}});
  EXPECT_EQ(r.status, 200) << r.body.dump();
  const std::string description = Shards(coord->http_port())["description"];
  EXPECT_NE(description.find("q8_0 on the wire"), std::string::npos) << description;
  for (const auto& w : ws) {
    EXPECT_NE(w->Stdout().find("assigned layers"), std::string::npos) << w->Stdout();
  }
}

TEST(SparrowdShardTest, AWorkerWithAnotherFileIsNamed) {
  const std::string other = testing::SharedDir() + "/arch/models/synth-qwen3-f32.gguf";
  if (!std::ifstream(other)) GTEST_SKIP() << other << " absent";
  auto w = StartWorker(other);
  ASSERT_NE(w, nullptr);
  std::string error;
  auto coord =
      Start(CoordinatorArgs(Stories(), Workers({}) + "127.0.0.1:" + std::to_string(w->grpc_port()),
                            "1,4"),
            &error);
  EXPECT_EQ(coord, nullptr);
  EXPECT_NE(error.find("worker 127.0.0.1:" + std::to_string(w->grpc_port()) + " holds"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("every device needs the same file"), std::string::npos) << error;
}

TEST(SparrowdShardTest, ACoordinatorWithoutTheKeyIsRefused) {
  auto w = StartWorker(Stories());
  ASSERT_NE(w, nullptr);
  std::string error;
  auto coord = Start(CoordinatorArgs(Stories(), "127.0.0.1:" + std::to_string(w->grpc_port()),
                                     "1,4", "another-worker-key-9876543210"),
                     &error);
  EXPECT_EQ(coord, nullptr);
  EXPECT_NE(error.find("worker 127.0.0.1:" + std::to_string(w->grpc_port())), std::string::npos)
      << error;
  EXPECT_NE(error.find("key"), std::string::npos) << error;
}

TEST(SparrowdShardTest, OverTlsWithTheDevicesCertificate) {
  const std::string dir = testing::TempPath("shard_tls");
  const auto made = testing::RunCommand("mkdir -p " + dir + " && " + std::string(SPARROWCTL) +
                                        " cert --out " + dir);
  ASSERT_EQ(made.exit_code, 0) << made.out;
  const std::string cert = dir + "/sparrow.crt", key = dir + "/sparrow.key";
  std::string error;
  std::vector<std::unique_ptr<SparrowdProcess>> ws;
  ws.push_back(Start({"--worker", "--model", Stories(), "--grpc-port", "0", "--worker-key-file",
                      KeyFile(kWorkerKey), "--threads", "1", "--tls-cert", cert, "--tls-key", key},
                     &error));
  ASSERT_NE(ws[0], nullptr) << error;
  EXPECT_NE(ws[0]->Stdout().find("TLS"), std::string::npos);
  // Without TLS the coordinator cannot reach it: it does not start, naming the worker.
  auto plain = Start(CoordinatorArgs(Stories(), Workers(ws), "2,3"), &error);
  EXPECT_EQ(plain, nullptr);
  EXPECT_NE(error.find("worker 127.0.0.1:" + std::to_string(ws[0]->grpc_port())), std::string::npos)
      << error;
  // With the devices' certificate it does (its start asked the worker for its file over TLS).
  std::vector<std::string> args = CoordinatorArgs(Stories(), Workers(ws), "2,3");
  for (const std::string& a : {std::string("--tls-cert"), cert, std::string("--tls-key"), key})
    args.push_back(a);
  auto coord = Start(args, &error);
  ASSERT_NE(coord, nullptr) << error;
  EXPECT_NE(coord->Stdout().find("layers placed across devices"), std::string::npos);

  // Mutual TLS: a coordinator that trusts the worker's certificate but presents another is
  // refused by the worker's handshake, key or not.
  const std::string other = testing::TempPath("shard_tls_other");
  ASSERT_EQ(testing::RunCommand("mkdir -p " + other + " && " + std::string(SPARROWCTL) +
                                " cert --out " + other)
                .exit_code,
            0);
  std::vector<std::string> stranger = CoordinatorArgs(Stories(), Workers(ws), "2,3");
  for (const std::string& a :
       {std::string("--tls-cert"), other + "/sparrow.crt", std::string("--tls-key"),
        other + "/sparrow.key", std::string("--shard-peer-cert"), cert})
    stranger.push_back(a);
  EXPECT_EQ(Start(stranger, &error), nullptr);
  EXPECT_NE(error.find("worker 127.0.0.1:" + std::to_string(ws[0]->grpc_port())), std::string::npos)
      << error;
  // A client with the worker key but no certificate is refused the same way.
  grpc::SslCredentialsOptions ssl;
  std::ifstream in(cert);
  std::stringstream pem;
  pem << in.rdbuf();
  ssl.pem_root_certs = pem.str();
  auto stub = shardpb::ShardWorker::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(ws[0]->grpc_port()), grpc::SslCredentials(ssl)));
  grpc::ClientContext call;
  call.AddMetadata("authorization", std::string("Bearer ") + kWorkerKey);
  call.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  shardpb::DescribeRequest req;
  shardpb::DescribeResponse resp;
  EXPECT_FALSE(stub->Describe(&call, req, &resp).ok());
  EXPECT_TRUE(resp.model_digest().empty());
  std::system(("rm -rf " + dir + " " + other).c_str());
}

// The coordinator sends its worker key, never its admin key: a worker's shard service takes
// only worker keys (the admin key of the worker itself included is refused), and an
// unauthenticated call is refused before gRPC reads its message (the worker's peak memory does
// not grow by the 200 MiB it was sent; it used to read up to 1 GiB first).
TEST(SparrowdShardTest, TheShardServiceTakesOnlyAWorkerKeyCheckedBeforeTheMessage) {
  auto w = StartWorker(Stories());
  ASSERT_NE(w, nullptr);
  auto stub = shardpb::ShardWorker::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(w->grpc_port()),
                          grpc::experimental::LocalCredentials(LOCAL_TCP)));
  auto describe = [&](const std::string& key) {
    grpc::ClientContext call;
    if (!key.empty()) call.AddMetadata("authorization", "Bearer " + key);
    call.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    shardpb::DescribeRequest req;
    shardpb::DescribeResponse resp;
    return stub->Describe(&call, req, &resp);
  };
  EXPECT_TRUE(describe(kWorkerKey).ok()) << describe(kWorkerKey).error_message();
  const grpc::Status admin = describe(kKey);
  EXPECT_EQ(admin.error_code(), grpc::StatusCode::UNAUTHENTICATED) << admin.error_message();
  EXPECT_EQ(describe("").error_code(), grpc::StatusCode::UNAUTHENTICATED);

  const int64_t before = PeakBytes(w->pid());
  ASSERT_GT(before, 0);
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(1 << 30);
  auto big = shardpb::ShardWorker::NewStub(
      grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(w->grpc_port()),
                                grpc::experimental::LocalCredentials(LOCAL_TCP), args));
  shardpb::EchoRequest echo;
  echo.mutable_payload()->assign(size_t{200} << 20, 'x');
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext call;
    call.AddMetadata("authorization", "Bearer not-the-worker-key-0123456789");
    call.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    shardpb::EchoResponse resp;
    const grpc::Status st = big->Echo(&call, echo, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED) << st.error_message();
  }
  const int64_t after = PeakBytes(w->pid());
  EXPECT_LT(after - before, int64_t{64} << 20) << before << " -> " << after;
  // With the key, a message beyond the largest step of this model is refused by its size.
  grpc::ClientContext call;
  call.AddMetadata("authorization", std::string("Bearer ") + kWorkerKey);
  call.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  shardpb::EchoResponse resp;
  EXPECT_EQ(big->Echo(&call, echo, &resp).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
}

// A worker that answers more than it was asked: after a step's answer, 300 of 1 MiB that no
// step asked for. The coordinator holds no more answers than steps in flight: it ends the
// session at the first extra one (the worker's writes stop on flow control), its memory does
// not grow by the flood (it used to queue every answer), and the next step names why.
class FloodingWorker final : public shardpb::ShardWorker::Service {
 public:
  explicit FloodingWorker(shardpb::DescribeResponse d) : d_(std::move(d)) {}
  grpc::Status Describe(grpc::ServerContext*, const shardpb::DescribeRequest*,
                        shardpb::DescribeResponse* r) override {
    *r = d_;
    return grpc::Status::OK;
  }
  grpc::Status Echo(grpc::ServerContext*, const shardpb::EchoRequest* q,
                    shardpb::EchoResponse* r) override {
    r->mutable_payload()->assign(static_cast<size_t>(q->reply_bytes()), '\0');
    return grpc::Status::OK;
  }
  grpc::Status Serve(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<shardpb::StageResponse, shardpb::StageRequest>* stream) override {
    shardpb::StageRequest req;
    if (!stream->Read(&req) || !stream->Write(shardpb::StageResponse())) return grpc::Status::OK;
    if (!stream->Read(&req) || !req.has_step()) return grpc::Status::OK;
    shardpb::StageResponse answer;
    answer.set_id(req.step().id());
    answer.set_encoding(req.step().encoding());
    *answer.mutable_hidden() = req.step().hidden();  // the right size: the answer is taken
    if (!stream->Write(answer)) return grpc::Status::OK;
    shardpb::StageResponse extra;
    extra.set_id(1000000);
    extra.mutable_hidden()->assign(size_t{1} << 20, '\0');
    int n = 0;
    while (n < 300 && stream->Write(extra)) ++n;
    std::lock_guard<std::mutex> lock(mu_);
    if (writes_ < 0) writes_ = n;
    done_.notify_all();
    return grpc::Status::OK;
  }
  // The extra answers the first flooded session could write; -1 if none ended within 60 s.
  int Writes() {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait_for(lock, std::chrono::seconds(60), [&] { return writes_ >= 0; });
    return writes_;
  }

 private:
  shardpb::DescribeResponse d_;
  std::mutex mu_;
  std::condition_variable done_;
  int writes_ = -1;
};

TEST(SparrowdShardTest, ACoordinatorHoldsNoAnswerNobodyAskedFor) {
  shardpb::DescribeResponse described;
  {
    auto real = StartWorker(Stories());
    ASSERT_NE(real, nullptr);
    auto stub = shardpb::ShardWorker::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(real->grpc_port()),
                            grpc::experimental::LocalCredentials(LOCAL_TCP)));
    grpc::ClientContext call;
    call.AddMetadata("authorization", std::string("Bearer ") + kWorkerKey);
    ASSERT_TRUE(stub->Describe(&call, shardpb::DescribeRequest(), &described).ok());
  }
  FloodingWorker fake(described);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::experimental::LocalServerCredentials(LOCAL_TCP),
                           &port);
  builder.RegisterService(&fake);
  auto server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  std::string error;
  // One step in flight at a time: the flood comes while none is asked for.
  std::vector<std::string> args =
      CoordinatorArgs(Stories(), "127.0.0.1:" + std::to_string(port), "1,4");
  args.insert(args.end(), {"--shard-micro-batches", "1"});
  auto coord = Start(args, &error);
  ASSERT_NE(coord, nullptr) << error;
  const int64_t before = PeakBytes(coord->pid());
  Reply r = Post(coord->http_port(), "/v1/completions",
                 {{"prompt", "Once upon a time"}, {"max_tokens", 1}, {"temperature", 0}});
  EXPECT_EQ(r.status, 200) << r.body.dump();
  const int writes = fake.Writes();
  EXPECT_GE(writes, 0);
  EXPECT_LT(writes, 100) << "the coordinator read the whole flood";
  const int64_t after = PeakBytes(coord->pid());
  EXPECT_LT(after - before, int64_t{100} << 20) << before << " -> " << after;
  // The next step finds the session ended, and says why.
  (void)Post(coord->http_port(), "/v1/completions",
             {{"prompt", "Once upon a time"}, {"max_tokens", 1}, {"temperature", 0}});
  EXPECT_NE(coord->Stdout().find("the worker sent an answer no step asked for"), std::string::npos)
      << coord->Stdout();
  server->Shutdown(std::chrono::system_clock::now());
}

// Off loopback the shard link needs TLS at both ends, --allow-insecure or not.
TEST(SparrowdShardTest, WithoutTlsAWorkerOrAWorkerAddressOffLoopbackIsRefused) {
  std::string error;
  EXPECT_EQ(Start(CoordinatorArgs(Stories(), "10.0.0.2:50061", "1,4"), &error), nullptr);
  EXPECT_NE(error.find("worker 10.0.0.2:50061 is not on loopback and this coordinator has no TLS"),
            std::string::npos)
      << error;
  EXPECT_EQ(Start({"--worker", "--model", Stories(), "--host", "0.0.0.0", "--grpc-port", "0",
                   "--worker-key-file", KeyFile(kWorkerKey), "--allow-insecure"},
                  &error),
            nullptr);
  EXPECT_NE(error.find("a worker on '0.0.0.0' (not loopback) needs TLS"), std::string::npos)
      << error;
}

// Three devices, one killed: the requests sent right after it (before the supervisor has placed
// the layers again) wait for the new placement and then get what one device gives; none fails.
TEST(SparrowdShardTest, RequestsArrivingWhileAKilledWorkerIsReplacedWaitAndRun) {
  const std::vector<std::string> alone = Alone(Stories());
  ASSERT_EQ(alone.size(), 4u);
  auto ws = TwoWorkers();
  ASSERT_TRUE(ws[0] && ws[1]);
  std::string error;
  std::vector<std::string> args = CoordinatorArgs(Stories(), Workers(ws), "1,2,2");
  *std::find(args.begin(), args.end(), "1500") = "5000";  // the wait's bound, not reached
  auto coord = Start(args, &error);
  ASSERT_NE(coord, nullptr) << error;
  ASSERT_EQ(Texts(coord->http_port()), alone);
  ws[1]->Signal(SIGKILL);
  ws[1]->Wait(std::chrono::seconds(5));
  // Sent at once, some concurrently: each must succeed with one device's output.
  std::vector<std::string> texts(3);
  std::vector<int> status(3);
  std::vector<std::thread> clients;
  for (int i = 0; i < 3; ++i) {
    clients.emplace_back([&, i] {
      Reply r =
          Post(coord->http_port(), "/v1/completions",
               {{"prompt", "Once upon a time, there was"}, {"max_tokens", 24}, {"temperature", 0}});
      status[i] = r.status;
      if (r.status == 200)
        texts[i] = r.body["choices"][0]["text"];
      else
        texts[i] = r.body.dump();
    });
  }
  for (auto& c : clients) c.join();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(status[i], 200) << texts[i];
    EXPECT_EQ(texts[i], alone[0]);
  }
  EXPECT_EQ(Texts(coord->http_port()), alone);
  const nlohmann::json s = Shards(coord->http_port());
  EXPECT_EQ(s["devices_down"].size(), 1u) << s.dump();
  EXPECT_EQ(s["replans"], 1) << s.dump();
}

TEST(SparrowdShardTest, BadWorkerSettingsAreNamed) {
  std::string error;
  EXPECT_EQ(Start(CoordinatorArgs(Stories(), "10.0.0.2", "1,4"), &error), nullptr);
  EXPECT_NE(error.find("'workers' entry '10.0.0.2' is not host:port"), std::string::npos) << error;
  auto w = StartWorker(Stories());
  ASSERT_NE(w, nullptr);
  const std::string one = "127.0.0.1:" + std::to_string(w->grpc_port());
  EXPECT_EQ(Start(CoordinatorArgs(Stories(), one, "1,2"), &error), nullptr);
  EXPECT_NE(error.find("adding up to the model's 5 layers, got '1,2'"), std::string::npos) << error;
  EXPECT_EQ(Start(CoordinatorArgs(Stories(), one, "1,x"), &error), nullptr);
  EXPECT_NE(error.find("'shard_layers' entry 'x'"), std::string::npos) << error;
  // Nothing listens there: the coordinator does not start, naming the worker.
  EXPECT_EQ(Start(CoordinatorArgs(Stories(), "127.0.0.1:1", "1,4"), &error), nullptr);
  EXPECT_NE(error.find("worker 127.0.0.1:1"), std::string::npos) << error;
}

TEST(SparrowdShardTest, AWorkerNeedsAWorkerKey) {
  std::string error;
  auto w =
      Start({"--worker", "--model", Stories(), "--grpc-port", "0", "--admin-key", kKey}, &error);
  EXPECT_EQ(w, nullptr);
  EXPECT_NE(error.find("a worker needs a worker key (worker_key_file)"), std::string::npos)
      << error;
  w = Start({"--worker", "--model", Stories(), "--grpc-port", "0", "--worker-key-file",
             "/nonexistent/worker.keys"},
            &error);
  EXPECT_EQ(w, nullptr);
  EXPECT_NE(error.find("/nonexistent/worker.keys"), std::string::npos) << error;
  // The admin key as a worker key would carry it on the link: refused at both ends.
  w = Start({"--worker", "--model", Stories(), "--grpc-port", "0", "--worker-key-file",
             KeyFile(kKey), "--admin-key", kKey},
            &error);
  EXPECT_EQ(w, nullptr);
  EXPECT_NE(error.find("is also an admin key"), std::string::npos) << error;
  auto coord = Start(CoordinatorArgs(Stories(), "127.0.0.1:1", "1,4", kKey), &error);
  EXPECT_EQ(coord, nullptr);
  EXPECT_NE(error.find("is also an admin key"), std::string::npos) << error;
}

// Whole layers on the worker, then a slice of every layer (the tensor split is cut again over
// the devices left, and again when the worker is back).
class SparrowdShardFaultTest : public ::testing::TestWithParam<bool> {};

TEST_P(SparrowdShardFaultTest, AKilledWorkersRequestsResumeTheRestServesAndItIsTakenBack) {
  const bool tensor = GetParam();
  const std::vector<std::string> alone = Alone(Stories());
  std::vector<std::unique_ptr<SparrowdProcess>> ws;
  ws.push_back(StartWorker(Stories()));
  ASSERT_NE(ws[0], nullptr);
  const int port = ws[0]->grpc_port();
  std::string error;
  std::vector<std::string> args = CoordinatorArgs(Stories(), Workers(ws), tensor ? "" : "2,3");
  if (tensor) args.insert(args.end(), {"--shard-split", "tensor"});
  auto coord = Start(args, &error);
  ASSERT_NE(coord, nullptr) << error;
  ASSERT_EQ(Texts(coord->http_port()), alone);

  // Killed while a long request runs: it waits for the layers to be placed again without the
  // worker and resumes there (it used to fail naming the worker).
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ws[0]->Signal(SIGKILL);
  });
  Reply during = Post(coord->http_port(), "/v1/completions",
                      {{"prompt", "Once"},
                       {"max_tokens", 1500},
                       {"temperature", 0},
                       {"logit_bias", {{"2", -100}}}});  // no end-of-text: it runs long
  killer.join();
  ws[0]->Wait(std::chrono::seconds(5));
  EXPECT_EQ(during.status, 200) << during.body.dump();
  // The server itself goes on: its own routes answer.
  EXPECT_EQ(testing::StatusOf(testing::RawExchange(
                "127.0.0.1", coord->http_port(),
                "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")),
            200);

  // The model still fits this device: its layers are placed again without the worker, and the
  // server answers as one device would.
  auto shards = [&] { return Shards(coord->http_port()); };
  auto wait_for = [&](auto done) {
    for (int i = 0; i < 200 && !done(shards()); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return shards();
  };
  nlohmann::json s =
      wait_for([](const nlohmann::json& j) { return j["devices_down"].size() == 1; });
  ASSERT_EQ(s["devices_down"].size(), 1u) << s.dump();
  EXPECT_EQ(s["devices_down"][0], "127.0.0.1:" + std::to_string(port));
  ASSERT_EQ(s["placement"].size(), 1u) << s.dump();
  EXPECT_EQ(s["placement"][0]["device"], "this device");
  EXPECT_EQ(s["placement"][0]["end_layer"], 5);
  EXPECT_EQ(s["replans"], 1);
  EXPECT_EQ(Texts(coord->http_port()), alone);
  EXPECT_NE(coord->Stdout().find("left ("), std::string::npos) << coord->Stdout();

  // Back on the same port: taken in again, with the layers it had.
  ws[0] = StartWorker(Stories(), port);
  ASSERT_NE(ws[0], nullptr);
  s = wait_for([](const nlohmann::json& j) { return j["devices_down"].empty(); });
  ASSERT_TRUE(s["devices_down"].empty()) << s.dump();
  ASSERT_EQ(s["placement"].size(), 2u) << s.dump();
  EXPECT_EQ(s["placement"][1]["first_layer"], tensor ? 0 : 2);
  EXPECT_EQ(s["placement"][1]["slice"].get<std::string>().empty(), !tensor) << s.dump();
  EXPECT_EQ(s["replans"], 2);
  EXPECT_EQ(Texts(coord->http_port()), alone);
  s = shards();
  ASSERT_EQ(s["links"].size(), 1u);
  EXPECT_GT(s["links"][0]["steps"].get<int64_t>(), 10) << s.dump();
  EXPECT_EQ(s["links"][0]["failures"], 0) << s.dump();
}

INSTANTIATE_TEST_SUITE_P(Splits, SparrowdShardFaultTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Tensor" : "Layers"; });

TEST(SparrowdShardTest, AStalledWorkerFailsItsStepAfterTheTimeout) {
  const std::vector<std::string> alone = Alone(Stories());
  std::vector<std::unique_ptr<SparrowdProcess>> ws;
  ws.push_back(StartWorker(Stories()));
  ASSERT_NE(ws[0], nullptr);
  std::string error;
  auto coord = Start(CoordinatorArgs(Stories(), Workers(ws), "2,3"), &error);
  ASSERT_NE(coord, nullptr) << error;
  ASSERT_EQ(Texts(coord->http_port()), alone);
  ws[0]->Signal(SIGSTOP);
  Reply r = Post(coord->http_port(), "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 8}});
  EXPECT_EQ(r.status, 500) << r.body.dump();
  EXPECT_NE(r.body.dump().find("no answer within 1500 ms"), std::string::npos) << r.body.dump();
  ws[0]->Signal(SIGCONT);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_EQ(Texts(coord->http_port()), alone);
}

}  // namespace
}  // namespace sparrow
