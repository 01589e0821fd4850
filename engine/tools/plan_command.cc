#include "engine/tools/plan_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <utility>

#include "engine/memory/context_fit.h"
#include "engine/model/model.h"
#include "engine/plan/plan_inputs.h"
#include "engine/plan/plan_io.h"
#include "engine/plan/planner.h"
#include "engine/sparse/activation_profile.h"
#include "engine/tools/cli_checks.h"

namespace sparrow::tools {
namespace {

// CATS at 0.5 cost the KJV model +4% perplexity (bench/RESULTS.md, session 6): the default
// quality limit when the operator names none.
constexpr double kDefaultMaxSparsity = 0.5;

int Fail(const std::string& message) {
  std::fprintf(stderr, "sparrow plan: %s\n", message.c_str());
  return 1;
}

std::string Mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

}  // namespace

void RegisterPlanCommand(CLI::App& app, PlanCommandOptions& o, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "plan",
      "Choose threads, neuron-cache size, KV pool and sparsity for a memory budget (PowerInfer-2's "
      "cost model solved with Z3) from the hardware profile (sparrow profile-hw) and the model's "
      "activation profile. Quality is limited by --max-sparsity: the profile has no perplexity "
      "per level (bench/RESULTS.md has measured ones)");
  cmd->add_option("-m,--model", o.model, "Model (a converted one plans its neuron cache)")
      ->required();
  cmd->add_option("--profile", o.profile,
                  "Activation profile (sparrow profile): sparsity levels and the miss curve");
  cmd->add_option("--hw", o.hw, "Hardware profile (default: the one sparrow profile-hw cached)");
  cmd->add_option("--budget-mb", o.budget_mb, "Memory budget in MiB (at most 16 TiB)")
      ->required()
      ->check(AboveZero(1 << 24));
  cmd->add_option("--threads-max", o.threads_max,
                  "Most compute threads (default: every count the hardware profile measured)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--min-tok-s", o.min_tok_s, "Minimum decode tokens/s")->check(ZeroOrMore(1e9));
  cmd->add_option("--max-sparsity", o.max_sparsity,
                  "The quality limit: the largest share of FFN neurons skipped per token "
                  "(default 0.5 for SwiGLU models, where CATS cost the KJV model +4% perplexity; "
                  "PowerInfer files: none, their level is the file's)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--objective", o.objective,
                  "speed: most tokens/s within the budget; memory: least memory at --min-tok-s")
      ->check(CLI::IsMember({"speed", "memory"}))
      ->capture_default_str();
  cmd->add_option("--active-share", o.active_share,
                  "PowerInfer files: share of neurons the predictor runs per token (sparrow bench "
                  "--json reports it as active_fraction; a file converted with --calibrate "
                  "records it)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--kv-tokens", o.kv_tokens,
                  "KV pool for at least this many positions (default: as sparrowd chooses its "
                  "context: the training context when its KV takes at most half of what the "
                  "budget leaves beside the weights and scratch, else the longest that does)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  cmd->add_option("--io-depth", o.io_depth, "Flash reads in flight (as sparrow bench --io-depth)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("-o,--output", o.output, "Also write the plan (YAML) to this file");
  cmd->add_flag("--json", o.json, "Print the plan as JSON");
  cmd->callback([&o, &exit_code] { exit_code = RunPlan(o); });
}

int RunPlan(const PlanCommandOptions& o) {
  auto model = Model::Load(o.model);
  if (!model.ok()) return Fail(model.status().ToString());
  const ModelConfig& c = (*model)->config();
  std::optional<ActivationProfile> profile;
  if (!o.profile.empty()) {
    auto p = ReadActivationProfile(o.profile, &c);
    if (!p.ok()) return Fail(p.status().ToString());
    profile = std::move(*p);
  }
  const std::string hw_path = o.hw.empty() ? plan::DefaultHardwareProfilePath() : o.hw;
  if (hw_path.empty()) return Fail("no hardware profile: pass --hw PATH");
  auto hw = plan::ReadHardwareProfile(hw_path);
  if (!hw.ok()) return Fail(hw.status().ToString());

  plan::PlanInputsOptions io;
  io.active_share = o.active_share;
  io.io_queue_depth = o.io_depth;
  auto inputs = plan::MakePlanInputs(**model, profile ? &*profile : nullptr, *hw, io);
  if (!inputs.ok()) return Fail(o.model + ": " + inputs.status().ToString());

  plan::PlanRequest req;
  req.budget_bytes = static_cast<size_t>(o.budget_mb * 1024 * 1024);
  req.max_threads = o.threads_max > 0 ? o.threads_max : hw->max_threads;
  req.min_tokens_per_s = o.min_tok_s;
  req.max_sparsity =
      o.max_sparsity ? *o.max_sparsity : (inputs->powerinfer ? 1.0 : kDefaultMaxSparsity);
  req.objective = o.objective == "memory" ? plan::PlanRequest::Objective::kMemory
                                          : plan::PlanRequest::Objective::kSpeed;
  ContextFit fit{o.kv_tokens, ""};
  if (o.kv_tokens <= 0) {
    ContextFitInput in;
    in.n_ctx_train = inputs->n_ctx;
    in.offer_bytes = req.budget_bytes;
    in.fixed_bytes = inputs->resident_bytes + inputs->scratch_bytes;
    in.kv_bytes_per_token = inputs->kv_bytes_per_token;
    fit = FitContext(in);
  }
  const int64_t kv_tokens = fit.n_ctx;
  req.min_kv_bytes = static_cast<size_t>(kv_tokens) * inputs->kv_bytes_per_token;

  auto plan = plan::SolvePlan(*inputs, req);
  if (!plan.ok()) {
    std::string why = plan.status().ToString();
    if (plan.status().code() == StatusCode::kResourceExhausted) {
      // Which part of the floor is the one that does not fit.
      const std::pair<uint64_t, std::string> parts[] = {
          {inputs->resident_bytes, "the resident weights (" + Mib(inputs->resident_bytes) + ")"},
          {inputs->scratch_bytes, "the step's scratch (" + Mib(inputs->scratch_bytes) + ")"},
          {req.min_kv_bytes, "the KV pool for " + std::to_string(kv_tokens) + " tokens (" +
                                 Mib(req.min_kv_bytes) + ")"}};
      const auto& most = *std::max_element(std::begin(parts), std::end(parts));
      why += "; most of it is " + most.second;
      if (&most == &parts[2] && o.kv_tokens > 0) why += ": a smaller --kv-tokens plans for less";
    }
    return Fail(why);
  }
  if (!o.output.empty()) {
    std::ofstream out(o.output, std::ios::binary | std::ios::trunc);
    out << plan::PlanToYaml(*plan);
    if (!(out.flush())) return Fail(o.output + ": cannot write the plan");
  }
  if (o.json) {
    std::printf("%s\n", plan::PlanToJson(*plan).c_str());
    return 0;
  }
  std::printf(
      "# model %s: resident %s, bundles %s (records of %llu bytes%s), KV %s for %lld "
      "tokens%s, scratch %s\n# miss curve: %s; hardware: %s\n",
      o.model.c_str(), Mib(inputs->resident_bytes).c_str(), Mib(inputs->bundle_bytes).c_str(),
      static_cast<unsigned long long>(inputs->record_bytes),
      inputs->converted ? "" : ", not converted: mapped whole", Mib(req.min_kv_bytes).c_str(),
      static_cast<long long>(kv_tokens),
      fit.why.empty() ? ""
                      : (" (fitted to the budget; the training context is " +
                         std::to_string(inputs->n_ctx) + ")")
                            .c_str(),
      Mib(inputs->scratch_bytes).c_str(), inputs->miss_curve_source.c_str(), hw_path.c_str());
  std::printf("%s# solved in %.1f ms\n", plan::PlanToYaml(*plan).c_str(), plan->solve_ms);
  return 0;
}

}  // namespace sparrow::tools
