#include "server/shard/connect_workers.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>
#include <sstream>

#include "engine/memory/device_memory.h"
#include "engine/model/model_digest.h"
#include "engine/plan/shard_planner.h"
#include "engine/shard/layer_profile.h"
#include "server/shard/grpc_remote_layers.h"
#include "server/shard/shard_link_security.h"
#include "server/shard/shard_supervisor.h"
#include "server/shard/shard_wire.h"

namespace sparrow::server {

namespace {

Result<std::vector<int64_t>> ParseCounts(const std::string& text, size_t devices, int64_t n_layer) {
  std::vector<int64_t> counts;
  std::stringstream ss(text);
  std::string item;
  int64_t sum = 0;
  while (std::getline(ss, item, ',')) {
    int64_t v = -1;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || p != item.data() + item.size() || v < 0) {
      return InvalidArgument("config: 'shard_layers' entry '" + item +
                             "' is not a layer count (0 or more)");
    }
    counts.push_back(v);
    sum += v;
  }
  if (counts.size() != devices || sum != n_layer) {
    return InvalidArgument("config: 'shard_layers' must give " + std::to_string(devices) +
                           " counts (this device, then each worker) adding up to the model's " +
                           std::to_string(n_layer) + " layers, got '" + text + "'");
  }
  return counts;
}

struct LinkProbe {
  double rtt_ms = 1;
  double mbps = 100;  // a LAN's guess, kept when a probe fails
};

// The round trip (the best of three empty calls) and the bandwidth (1 MiB each way, the slower
// direction, less the round trip), through the worker's Echo.
LinkProbe ProbeLink(shardpb::ShardWorker::Stub& stub, const std::string& key, int64_t timeout_ms) {
  using Clock = std::chrono::steady_clock;
  auto call = [&](int64_t send, int64_t reply) -> std::optional<double> {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer " + key);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
    shardpb::EchoRequest req;
    req.mutable_payload()->assign(static_cast<size_t>(send), '\0');
    req.set_reply_bytes(reply);
    shardpb::EchoResponse resp;
    const auto t0 = Clock::now();
    if (!stub.Echo(&ctx, req, &resp).ok()) return std::nullopt;
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  };
  LinkProbe p;
  double rtt = 1e9;
  for (int i = 0; i < 3; ++i) {
    if (auto ms = call(0, 0)) rtt = std::min(rtt, *ms);
  }
  if (rtt == 1e9) return p;
  p.rtt_ms = rtt;
  constexpr int64_t kProbe = 1 << 20;
  const auto up = call(kProbe, 0), down = call(0, kProbe);
  if (up && down) {
    const double slower = std::max(*up, *down) - rtt;
    if (slower > 0) p.mbps = kProbe * 8.0 / (slower * 1e3);
  }
  return p;
}

}  // namespace

Result<std::vector<std::string>> ParseWorkerList(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto colon = item.rfind(':');
    int port = 0;
    const bool port_ok =
        colon != std::string::npos && colon > 0 &&
        std::from_chars(item.data() + colon + 1, item.data() + item.size(), port).ptr ==
            item.data() + item.size() &&
        port > 0 && port < 65536;
    if (!port_ok) {
      return InvalidArgument("config: 'workers' entry '" + item +
                             "' is not host:port (the worker's gRPC port)");
    }
    out.push_back(item);
  }
  if (out.empty()) return InvalidArgument("config: 'workers' names no worker");
  return out;
}

Result<ConnectedWorkers> ConnectWorkers(const ServerConfig& config, const Model& model,
                                        kernels::ThreadPool* pool) {
  SPARROW_ASSIGN_OR_RETURN(std::vector<std::string> addresses, ParseWorkerList(config.workers));
  SPARROW_ASSIGN_OR_RETURN(std::vector<std::string> keys, ReadWorkerKeys(config));
  const std::string key = keys.front();
  SPARROW_ASSIGN_OR_RETURN(auto creds, CoordinatorCredentials(config, addresses));
  if (config.step_token_budget > kMaxStepTokens) {
    return InvalidArgument("config: 'step_token_budget' " +
                           std::to_string(config.step_token_budget) + " exceeds the " +
                           std::to_string(kMaxStepTokens) + " tokens a step to a worker may carry");
  }
  const bool auto_encoding = config.shard_encoding == "auto";
  SPARROW_ASSIGN_OR_RETURN(auto encoding, auto_encoding
                                              ? shardpb::ENCODING_F32
                                              : ParseShardEncoding(config.shard_encoding));
  if (encoding == shardpb::ENCODING_Q8_0 && model.config().n_embd % 32 != 0) {
    return InvalidArgument("config: 'shard_encoding' q8_0 needs the model's n_embd (" +
                           std::to_string(model.config().n_embd) + ") a multiple of 32");
  }
  const std::string digest = ModelDigest(model.file());
  const int64_t n_layer = model.config().n_layer;
  const bool planned = config.shard_layers.empty();

  std::vector<ShardDevice> devices(1);
  devices[0].name = "this device";
  // As a worker offers (ShardWorkerService): 90% of the device for layers and their KV.
  devices[0].memory_bytes = static_cast<int64_t>(DeviceMemoryLimit() / 100 * 90);
  if (planned) {
    devices[0].layer_ms = ProfileLayerDecodeMs(model, pool);
    devices[0].layer_prefill_ms = ProfileLayerPrefillMs(model, pool);
  }
  for (const std::string& address : addresses) {
    auto stub = shardpb::ShardWorker::NewStub(grpc::CreateChannel(address, creds));
    grpc::ClientContext call;
    call.AddMetadata("authorization", "Bearer " + key);
    call.set_deadline(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(config.worker_timeout_ms) +
                      std::chrono::seconds(planned ? 60 : 0));
    shardpb::DescribeRequest req;
    req.set_profile(planned);
    shardpb::DescribeResponse resp;
    grpc::Status st = stub->Describe(&call, req, &resp);
    if (!st.ok()) {
      return Unavailable("worker " + address + ": " +
                         (st.error_message().empty() ? "unreachable" : st.error_message()));
    }
    if (resp.model_digest() != digest) {
      return InvalidArgument("worker " + address + " holds " + resp.model_file() + " (digest " +
                             resp.model_digest() + "), not " + model.file().path() + " (digest " +
                             digest + "): every device needs the same file");
    }
    const LinkProbe link = ProbeLink(*stub, key, config.worker_timeout_ms);
    ShardDevice d;
    d.name = address;
    d.layer_ms.assign(resp.layer_decode_ms().begin(), resp.layer_decode_ms().end());
    d.layer_prefill_ms.assign(resp.layer_prefill_ms().begin(), resp.layer_prefill_ms().end());
    d.memory_bytes = resp.memory_budget_bytes();
    d.rtt_ms = link.rtt_ms;
    d.link_mbps = link.mbps;
    devices.push_back(std::move(d));
  }

  // Ranges in layer order: (device, first, end).
  for (const ShardDevice& d : devices) {
    double total_ms = 0, prefill_ms = 0;
    for (double ms : d.layer_ms) total_ms += ms;
    for (double ms : d.layer_prefill_ms) prefill_ms += ms;
    spdlog::info(
        "shard: {}: {} MiB for layers, {:.2f} ms per token for all of them ({:.3f} per "
        "token of a prompt){}",
        d.name, d.memory_bytes >> 20, total_ms, prefill_ms,
        &d == &devices[0]
            ? std::string()
            : fmt::format(", round trip {:.2f} ms, {:.0f} Mbit/s", d.rtt_ms, d.link_mbps));
  }
  ShardSupervisorOptions so;
  // The context the served model gets (LoadServedModel's rule): the KV of a layer is part of
  // what a device must hold for it.
  const int64_t train = model.config().n_ctx_train;
  const int64_t n_ctx = config.n_ctx > 0 ? config.n_ctx : (train > 0 ? train : 2048);
  // Bytes per value on the wire (q8_0: 34 bytes per 32).
  // With auto, the slowest link's encoding stands for all of them.
  if (auto_encoding) {
    double slowest = std::numeric_limits<double>::infinity();
    for (size_t i = 1; i < devices.size(); ++i) slowest = std::min(slowest, devices[i].link_mbps);
    encoding = EncodingForLink(slowest, model.config().n_embd);
  }
  const double value_bytes = encoding == shardpb::ENCODING_F16    ? 2
                             : encoding == shardpb::ENCODING_Q8_0 ? 34.0 / 32
                                                                  : 4;
  const KvTypes kv_types{KvCacheTypeFromName(config.cache_type_k).value_or(TensorType::kF16),
                         KvCacheTypeFromName(config.cache_type_v).value_or(TensorType::kF16)};
  so.cost = ModelShardCost(model, n_ctx, value_bytes, kv_types);
  for (auto& d : devices) {
    // A device that cannot tell its memory is taken to hold the whole model.
    if (d.memory_bytes <= 0) d.memory_bytes = std::numeric_limits<int64_t>::max() / 4;
  }
  so.objective = config.shard_objective == "throughput" ? ShardObjective::kThroughput
                                                        : ShardObjective::kLatency;
  if (!planned) {
    SPARROW_ASSIGN_OR_RETURN(auto counts,
                             ParseCounts(config.shard_layers, devices.size(), n_layer));
    int64_t first = 0;
    for (size_t i = 0; i < devices.size(); ++i) {
      if (counts[i] == 0) continue;
      ShardRange& r = so.fixed.emplace_back();
      r.device = static_cast<int>(i);
      r.first = first;
      r.end = first + counts[i];
      first += counts[i];
    }
  }
  so.devices = std::move(devices);
  so.link.key = key;
  so.link.credentials = creds;
  so.link.kv_block_size = config.kv_block_size;
  so.link.kv_types = kv_types;
  so.link.n_embd = model.config().n_embd;
  so.link.model_digest = digest;
  so.link.encoding = encoding;
  if (auto_encoding) so.encoding_for_n_embd = model.config().n_embd;
  so.link.step_timeout = std::chrono::milliseconds(config.worker_timeout_ms);
  so.micro_batches = config.shard_micro_batches;
  if (config.shard_split != "layers") so.split_model = &model;
  so.split_auto = config.shard_split == "auto";
  SPARROW_ASSIGN_OR_RETURN(auto supervisor, ShardSupervisor::Create(std::move(so)));
  ConnectedWorkers out;
  out.ranges = supervisor->ranges();
  out.topology = std::move(supervisor);
  return out;
}

}  // namespace sparrow::server
