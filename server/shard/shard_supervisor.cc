#include "server/shard/shard_supervisor.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>

#include "engine/memory/device_memory.h"
#include "engine/plan/tensor_split_plan.h"
#include "server/shard/shard_wire.h"

namespace sparrow::server {

namespace {

namespace shardpb = ::sparrow::shard::v1;

std::shared_ptr<grpc::Channel> ProbeChannel(const RemoteLayersOptions& o,
                                            const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, kShardReconnectMs);
  return grpc::CreateCustomChannel(address, o.credentials, args);
}

bool SameRanges(const std::vector<ShardRange>& a, const std::vector<ShardRange>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const auto& x, const auto& y) {
    return x.device == y.device && x.first == y.first && x.end == y.end && x.slice == y.slice;
  });
}

}  // namespace

ShardSupervisor::ShardSupervisor(ShardSupervisorOptions options)
    : o_(std::move(options)), up_(o_.devices.size(), 1) {
  stubs_.resize(o_.devices.size());
  for (size_t i = 1; i < o_.devices.size(); ++i) {
    stubs_[i] = shardpb::ShardWorker::NewStub(ProbeChannel(o_.link, o_.devices[i].name));
  }
}

Result<std::shared_ptr<ShardSupervisor>> ShardSupervisor::Create(ShardSupervisorOptions options) {
  std::shared_ptr<ShardSupervisor> s(new ShardSupervisor(std::move(options)));
  SPARROW_ASSIGN_OR_RETURN(ShardPlan plan, s->Place());
  s->Install(std::move(plan));
  return s;
}

ShardSupervisor::~ShardSupervisor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

Result<ShardPlan> ShardSupervisor::Place() const {
  if (o_.fixed.empty()) {
    std::vector<size_t> index;
    std::vector<ShardDevice> up;
    for (size_t i = 0; i < o_.devices.size(); ++i) {
      if (!up_[i]) continue;
      index.push_back(i);
      up.push_back(o_.devices[i]);
    }
    Result<ShardPlan> placed = o_.split_model && !o_.split_auto
                                   ? PlanTensorSplit(*o_.split_model, o_.cost, up)
                                   : PlanShards(o_.cost, up, o_.objective);
    if (o_.split_auto && o_.objective == ShardObjective::kLatency) {
      // The tensor split where it is predicted faster for one stream (and can be made).
      Result<ShardPlan> tensor = PlanTensorSplit(*o_.split_model, o_.cost, up);
      if (tensor.ok() && (!placed.ok() || tensor->token_ms < placed->token_ms)) {
        placed = std::move(tensor);
      }
    }
    SPARROW_ASSIGN_OR_RETURN(ShardPlan plan, std::move(placed));
    for (ShardRange& r : plan.ranges) r.device = static_cast<int>(index[r.device]);
    return plan;
  }
  // Fixed counts: a missing worker's layers come to this device, if they fit it.
  std::vector<ShardRange> out;
  bool moved = false;
  for (ShardRange r : o_.fixed) {
    if (!up_[r.device]) {
      r.device = 0;
      moved = true;
    }
    if (!out.empty() && out.back().device == r.device) {
      out.back().end = r.end;
    } else {
      out.push_back(r);
    }
  }
  if (moved) {
    int64_t bytes = o_.cost.coordinator_fixed_bytes;
    for (const ShardRange& r : out) {
      if (r.device != 0) continue;
      for (int64_t il = r.first; il < r.end; ++il) bytes += o_.cost.layer_bytes[il];
    }
    if (bytes > o_.devices[0].memory_bytes) {
      return ResourceExhausted("this device would need " + std::to_string(bytes >> 20) +
                               " MiB for its layers and offers " +
                               std::to_string(o_.devices[0].memory_bytes >> 20) + " MiB");
    }
  }
  ShardPlan plan;
  plan.ranges = std::move(out);
  return plan;
}

void ShardSupervisor::Install(ShardPlan plan) {
  std::vector<ShardRange>& ranges = plan.ranges;
  std::vector<std::shared_ptr<GrpcRemoteLayers>> links;
  std::vector<size_t> link_device;
  View v;
  std::string wire;  // with shard_encoding auto: each link's encoding
  for (const ShardRange& r : ranges) {
    const std::string& name = o_.devices[static_cast<size_t>(r.device)].name;
    v.placement.push_back({name, r.first, r.end, r.slice ? r.slice->ToString() : ""});
    if (!o_.fixed.empty()) {
      v.description +=
          name + ": layers " + std::to_string(r.first) + ".." + std::to_string(r.end - 1) + "\n";
    }
    if (r.device == 0) continue;
    RemoteLayersOptions lo = o_.link;
    lo.address = name;
    lo.first_layer = r.first;
    lo.end_layer = r.end;
    lo.slice = r.slice;
    const ShardDevice& dev = o_.devices[static_cast<size_t>(r.device)];
    if (o_.encoding_for_n_embd > 0) {
      lo.encoding = EncodingForLink(dev.link_mbps, o_.encoding_for_n_embd);
      wire += name + ": " + std::string(EncodingName(lo.encoding)) + " on the wire (" +
              std::to_string(static_cast<int64_t>(dev.link_mbps)) + " Mbit/s)\n";
    }
    links.push_back(std::make_shared<GrpcRemoteLayers>(std::move(lo)));
    link_device.push_back(static_cast<size_t>(r.device));
    v.links.push_back(links.back());
  }
  if (o_.fixed.empty()) v.description = DescribeShardPlan(plan, o_.devices);
  v.description += wire;
  // The scheduler's and ForwardPass's defaults: one batch in flight per device, a lone batch
  // cut in one micro-batch per device.
  const int64_t stages = static_cast<int64_t>(links.size()) + 1;
  const int64_t micro = o_.micro_batches > 0 ? o_.micro_batches : stages;
  const bool tensor = !ranges.empty() && ranges.front().slice.has_value();
  if (tensor) {
    v.description += "tensor split: every layer's attention and FFN cut over " +
                     std::to_string(stages) +
                     " devices, their partial sums added here (two exchanges per layer with "
                     "each worker)\n";
  } else {
    v.description += micro > 1 ? "pipeline: " + std::to_string(stages) +
                                     " batches in flight, a lone batch cut in " +
                                     std::to_string(micro) + " micro-batches\n"
                               : "no pipeline: one batch at a time goes from device to device\n";
  }
  for (size_t i = 1; i < o_.devices.size(); ++i) {
    if (!up_[i]) v.devices_down.push_back(o_.devices[i].name);
  }
  placed_ = std::move(ranges);
  failures_seen_.assign(links.size(), 0);
  std::lock_guard<std::mutex> lock(mu_);
  v.replans = view_.placement.empty() ? 0 : view_.replans + 1;
  view_ = std::move(v);
  links_ = std::move(links);
  link_device_ = std::move(link_device);
}

std::vector<std::shared_ptr<RemoteLayers>> ShardSupervisor::ranges() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {links_.begin(), links_.end()};
}

ShardTopology::View ShardSupervisor::view() const {
  std::lock_guard<std::mutex> lock(mu_);
  return view_;
}

void ShardSupervisor::Start(std::function<void(std::vector<std::shared_ptr<RemoteLayers>>)> apply) {
  apply_ = std::move(apply);
  watcher_ = std::thread([this] { Watch(); });
}

std::optional<int64_t> ShardSupervisor::Budget(size_t device) {
  grpc::ClientContext call;
  call.AddMetadata("authorization", "Bearer " + o_.link.key);
  const auto wait =
      std::min<std::chrono::milliseconds>(o_.link.step_timeout, std::chrono::milliseconds(2000));
  call.set_deadline(std::chrono::system_clock::now() + wait);
  shardpb::DescribeRequest req;
  shardpb::DescribeResponse resp;
  if (!stubs_[device]->Describe(&call, req, &resp).ok() ||
      resp.model_digest() != o_.link.model_digest) {
    return std::nullopt;
  }
  return resp.memory_budget_bytes();
}

std::string ShardSupervisor::BudgetsMoved() {
  std::string why;
  auto moved = [&](size_t d, int64_t now) {
    int64_t& known = o_.devices[d].memory_bytes;
    if (now <= 0 || std::llabs(now - known) * 20 <= known) return;
    why += o_.devices[d].name + " offers " + std::to_string(now >> 20) + " MiB (was " +
           std::to_string(known >> 20) + "); ";
    known = now;
  };
  // As ConnectWorkers counts this device: 90% of its limit.
  moved(0, static_cast<int64_t>(DeviceMemoryLimit() / 100 * 90));
  for (size_t d = 1; d < o_.devices.size(); ++d) {
    if (!up_[d]) continue;
    if (const auto b = Budget(d)) moved(d, *b);
  }
  return why;
}

void ShardSupervisor::Watch() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait_for(lock, o_.probe_every, [this] { return stop_; });
    if (stop_) return;
    const auto links = links_;
    const auto link_device = link_device_;
    lock.unlock();
    std::string why;
    // A link that failed since the last look: is its worker still there?
    for (size_t i = 0; i < links.size(); ++i) {
      const ShardLinkStats s = links[i]->link_stats();
      if (s.failures <= failures_seen_[i]) continue;
      failures_seen_[i] = s.failures;
      const size_t d = link_device[i];
      if (!Answers(d)) {
        up_[d] = 0;
        why += o_.devices[d].name + " left (" + s.last_error + "); ";
      }
    }
    for (size_t d = 1; d < o_.devices.size(); ++d) {
      if (up_[d] || !Answers(d)) continue;
      up_[d] = 1;
      why += o_.devices[d].name + " is back; ";
    }
    if (++probes_ >= o_.budget_every) {
      probes_ = 0;
      why += BudgetsMoved();
    }
    if (!why.empty()) {
      Result<ShardPlan> plan = Place();
      if (!plan.ok()) {
        spdlog::warn("shard: {}the layers stay where they were: {}", why, plan.status().message());
      } else if (!SameRanges(plan->ranges, placed_)) {
        Install(std::move(*plan));
        spdlog::info("shard: {}layers placed again:\n{}", why, view().description);
        apply_(this->ranges());
      }
    }
    lock.lock();
  }
}

}  // namespace sparrow::server
