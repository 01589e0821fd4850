#pragma once
// ShardSupervisor: keeps a coordinator's layer placement fitting the devices that answer. It
// watches each worker link; when one fails and the worker no longer answers Describe, the layers
// are placed again over the devices left (EdgeShard's dynamic program over their measured times,
// or, with fixed counts, the missing worker's layers on this device; or the tensor split cut
// again over the devices left) if the model still fits them, and the scheduler gets the new ranges.
// A worker that answers again (the same file) is taken back the same way. A placement that cannot
// be made is logged naming the constraint, and the old one stays (its requests fail until the
// worker returns). A device whose memory budget moves (its cgroup limit changed) is planned for
// again the same way.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/plan/shard_planner.h"
#include "server/core/worker_ranges.h"
#include "server/shard/grpc_remote_layers.h"
#include "sparrow/shard/v1/shard.grpc.pb.h"

namespace sparrow::server {

struct ShardSupervisorOptions {
  // devices[0] is this one; the others are the workers, by address, with their profiles (layer
  // times empty when the counts were fixed).
  std::vector<ShardDevice> devices;
  ShardModelCost cost;
  ShardObjective objective = ShardObjective::kLatency;
  // The fixed placement (shard_layers), or empty: placed by the dynamic program.
  std::vector<ShardRange> fixed;
  // Non-null: Galaxy's tensor split of this model over the devices up (PlanTensorSplit) instead
  // of ranges of whole layers; with split_auto, whichever of the two the planners predict the
  // lower per-token time for (the latency objective; throughput keeps the pipeline).
  const Model* split_model = nullptr;
  bool split_auto = false;
  // > 0: shard_encoding auto, each link's encoding chosen from its measured bandwidth
  // (EncodingForLink) for a model of this n_embd.
  int64_t encoding_for_n_embd = 0;
  // Every link's settings but the address and the layers.
  RemoteLayersOptions link;
  int64_t micro_batches = 0;  // for the description (SchedulerOptions::pipeline_micro_batches)
  std::chrono::milliseconds probe_every{500};
  // Every this many probes, each device's memory budget is asked again; one that moved by more
  // than a twentieth places the layers again when the placement changes with it.
  int budget_every = 10;
};

class ShardSupervisor final : public ShardTopology {
 public:
  // Places the layers over all devices. Errors name the constraint no placement meets.
  static Result<std::shared_ptr<ShardSupervisor>> Create(ShardSupervisorOptions options);
  ~ShardSupervisor() override;

  // The current placement's remote ranges.
  std::vector<std::shared_ptr<RemoteLayers>> ranges() const;
  View view() const override;
  void Start(std::function<void(std::vector<std::shared_ptr<RemoteLayers>>)> apply) override;

 private:
  explicit ShardSupervisor(ShardSupervisorOptions options);
  // The placement over the devices marked up, or why there is none.
  Result<ShardPlan> Place() const;
  // Makes `plan` the placement: new links, the description, the view.
  void Install(ShardPlan plan);
  // Describe within a short deadline, holding the same file: its memory budget (0: unknown),
  // or nullopt when it does not answer so.
  std::optional<int64_t> Budget(size_t device);
  bool Answers(size_t device) { return Budget(device).has_value(); }
  // Devices whose budget moved: their new budgets in o_.devices, and why for the log.
  std::string BudgetsMoved();
  void Watch();

  ShardSupervisorOptions o_;
  std::vector<std::unique_ptr<::sparrow::shard::v1::ShardWorker::Stub>> stubs_;  // per device
  std::vector<uint8_t> up_;             // per device; the watch thread's
  std::vector<int64_t> failures_seen_;  // per device; the watch thread's
  std::vector<ShardRange> placed_;      // the watch thread's (and Create's)
  int probes_ = 0;                      // the watch thread's
  std::function<void(std::vector<std::shared_ptr<RemoteLayers>>)> apply_;

  mutable std::mutex mu_;
  View view_;                                             // guarded by mu_
  std::vector<std::shared_ptr<GrpcRemoteLayers>> links_;  // guarded by mu_; per remote range
  std::vector<size_t> link_device_;                       // guarded by mu_
  std::condition_variable wake_;
  bool stop_ = false;  // guarded by mu_
  std::thread watcher_;
};

}  // namespace sparrow::server
