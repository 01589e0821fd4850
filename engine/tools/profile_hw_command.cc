#include "engine/tools/profile_hw_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "engine/model/model.h"
#include "engine/plan/cost_model.h"
#include "engine/plan/plan_inputs.h"
#include "engine/tools/hw_probe.h"
#include "engine/tools/store_probe.h"

namespace sparrow::tools {
namespace {

// What the cost model predicts for `model_path` mapped, decoding with `active_share` of its
// neurons at `threads`: the figure the probe's measured decode is compared with.
Result<double> ModelledMappedSeconds(const std::string& model_path, const plan::HardwareProfile& hw,
                                     double active_share, int threads) {
  SPARROW_ASSIGN_OR_RETURN(auto model, Model::Load(model_path));
  plan::HardwareProfile rates = hw;
  rates.store_seconds_per_neuron = 0;
  rates.store_token_overhead_seconds = 0;
  plan::PlanInputsOptions io;
  io.active_share = active_share;
  SPARROW_ASSIGN_OR_RETURN(plan::PlanInputs in, plan::MakePlanInputs(*model, nullptr, rates, io));
  in.converted = false;  // mapped: no store term
  plan::PlanLevel level;
  level.sparsity = 1 - active_share;
  level.active_share = active_share;
  level.gather = active_share < 1;
  return plan::DenseSeconds(in, threads, level) +
         plan::FfnComputeSeconds(in, threads, level) * static_cast<double>(in.n_layer);
}

}  // namespace

void RegisterProfileHwCommand(CLI::App& app, ProfileHwOptions& o, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "profile-hw",
      "Measure this device for the planner (kernel throughput per thread count, memory "
      "bandwidth, flash reads by block size and depth, and with a converted -m model what its "
      "neuron store costs per neuron) and cache it (default "
      "$XDG_CACHE_HOME/sparrow/hw.yaml or ~/.cache/sparrow/hw.yaml)");
  cmd->add_option("-m,--model", o.model,
                  "Model whose file the flash probe reads (a converted one: the file the "
                  "neuron cache will read)");
  cmd->add_option("--flash-file", o.flash_file, "File the flash probe reads instead of the model");
  cmd->add_option("-o,--output", o.output, "Where to write the profile");
  cmd->add_option("-t,--threads", o.threads, "Measure 1..T threads (0: every hardware thread)")
      ->check(CLI::Range(0, 1024));
  cmd->add_flag("--quick", o.quick, "Smaller probes (about a second; less accurate)");
  cmd->add_flag("--no-flash", o.no_flash, "Skip the flash probe (models kept in memory)");
  cmd->callback([&o, &exit_code] { exit_code = RunProfileHw(o); });
}

int RunProfileHw(const ProfileHwOptions& o) {
  auto fail = [](const std::string& m) {
    std::fprintf(stderr, "sparrow profile-hw: %s\n", m.c_str());
    return 1;
  };
  HwProbeOptions probe;
  probe.max_threads = o.threads;
  if (!o.no_flash) probe.flash_file = o.flash_file.empty() ? o.model : o.flash_file;
  if (!o.no_flash && probe.flash_file.empty()) {
    return fail("name the file the flash probe reads (-m MODEL or --flash-file), or --no-flash");
  }
  if (o.quick) {
    probe.matrix_bytes = uint64_t{4} << 20;
    probe.reps = 2;
    probe.bandwidth_bytes = uint64_t{32} << 20;
    probe.bandwidth_reps = 1;
    probe.block_bytes = {4096, 65536};
    probe.queue_depths = {1, 8};
    probe.flash_bytes_per_size = uint64_t{1} << 20;
  }
  const std::string out = o.output.empty() ? plan::DefaultHardwareProfilePath() : o.output;
  if (out.empty()) return fail("no cache directory ($XDG_CACHE_HOME, $HOME): pass -o PATH");
  const auto t0 = std::chrono::steady_clock::now();
  auto hw = MeasureHardware(probe);
  if (!hw.ok()) return fail(hw.status().ToString());
  if (!o.model.empty()) {
    // A converted model: what its store costs per active neuron, at the most threads measured.
    StoreProbeOptions sp;
    sp.model = o.model;
    sp.threads = hw->max_threads;
    if (o.quick) sp.tokens = 8, sp.reps = 1;
    auto store = MeasureStoreOverhead(sp);
    if (store.ok()) {
      hw->store_seconds_per_neuron = store->seconds_per_neuron;
      hw->store_model = o.model;
      // What the rates leave out, per token: measured against the model's own prediction.
      const double share = store->neurons_per_token /
                           static_cast<double>(std::max<int64_t>(1, store->n_layer * store->n_ff));
      auto modelled = ModelledMappedSeconds(o.model, *hw, share, hw->max_threads);
      if (modelled.ok()) {
        hw->store_token_overhead_seconds = std::max(0.0, store->mapped_s_per_token - *modelled);
        std::fprintf(stderr,
                     "sparrow profile-hw: the rates predict %.2f ms a token for it mapped at %d "
                     "threads; the rest, %.2f ms, is its overhead per token\n",
                     *modelled * 1e3, hw->max_threads, hw->store_token_overhead_seconds * 1e3);
      } else {
        std::fprintf(stderr, "sparrow profile-hw: no overhead per token: %s\n",
                     modelled.status().ToString().c_str());
      }
      std::fprintf(stderr,
                   "sparrow profile-hw: store probe: %.2f ms a token mapped, %.2f ms through a "
                   "store holding every record, %.0f active neurons a token: %.1f ns each\n",
                   store->mapped_s_per_token * 1e3, store->store_s_per_token * 1e3,
                   store->neurons_per_token, store->seconds_per_neuron * 1e9);
    } else {
      std::fprintf(stderr, "sparrow profile-hw: store probe skipped: %s\n",
                   store.status().ToString().c_str());
    }
  }
  const auto parent = std::filesystem::path(out).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) return fail(parent.string() + ": cannot create the directory: " + ec.message());
  Status st = plan::WriteHardwareProfile(*hw, out);
  if (!st.ok()) return fail(st.ToString());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s", plan::HardwareProfileToYaml(*hw).c_str());
  std::fprintf(stderr, "sparrow profile-hw: wrote %s (measured in %.1f s)\n", out.c_str(), s);
  return 0;
}

}  // namespace sparrow::tools
