#include "engine/tools/convert_command.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

namespace sparrow::tools {
namespace {

std::string Mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

}  // namespace

void RegisterConvertCommand(CLI::App& app, ConvertOptions& o, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "convert",
      "Rewrite a model (GGUF or PowerInfer's PWRI) in Sparrow's sparse layout: one record per FFN "
      "neuron (its gate, up and down rows), hot neurons first, for reading from flash; for a "
      "mixture-of-experts model one record per expert, hot experts first");
  cmd->add_option("-m,--model", o.model, "Model to convert")->required();
  cmd->add_option("-o,--output", o.output, "Path of the converted GGUF file")->required();
  cmd->add_option("--profile", o.profile,
                  "Activation profile (sparrow profile) whose frequencies put hot neurons first; "
                  "without it neurons keep the file's order");
  cmd->add_option("--hot-level", o.hot_level,
                  "The profile's sparsity level whose frequencies order the neurons")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--calibrate", o.calibrate,
                  "PowerInfer files: a text whose tokens the file's own predictor runs over; "
                  "neurons it picks most often go first. Mixture-of-experts files: a text the "
                  "router runs over; experts it picks most often go first");
  cmd->add_option("--calibrate-tokens", o.calibrate_tokens, "Tokens of --calibrate to run")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 24));
  cmd->add_option("-t,--threads", o.threads, "Threads for --calibrate (0: all cores)")
      ->check(CLI::Range(0, 1024));
  cmd->add_flag("--expert-neurons", o.expert_neurons,
                "Mixture-of-experts files whose experts are ReGLU (SmallThinker): store each "
                "expert as its gate matrix then one bundle per neuron (up row, down column), so a "
                "computed expert skips the down rows of the neurons its gate closed as well as "
                "their up rows; the down columns become Q8_0 rows (F16/F32 kept), which makes "
                "quantized records larger");
  cmd->add_option("--io-block", o.io_block,
                  "I/O block in bytes: records are padded so that none straddles one")
      ->capture_default_str();
  cmd->callback([&o, &exit_code] { exit_code = RunConvert(o); });
}

int RunConvert(const ConvertOptions& opts) {
  ConvertOptions o = opts;
  o.progress = isatty(STDERR_FILENO) != 0;
  auto sum = ConvertToBundles(o);
  if (!sum.ok()) {
    std::fprintf(stderr, "sparrow convert: %s\n", sum.status().ToString().c_str());
    return 1;
  }
  if (sum->n_expert > 0) {
    std::printf(
        "wrote %s: %lld layers x %lld experts of %lld neurons, records of %llu bytes (%llu of "
        "%s), %s\nresident %s, experts %s\n",
        o.output.c_str(), static_cast<long long>(sum->n_layer),
        static_cast<long long>(sum->n_expert), static_cast<long long>(sum->n_ff),
        static_cast<unsigned long long>(sum->record_bytes),
        static_cast<unsigned long long>(sum->row_bytes),
        sum->expert_neuron_bundles ? "gate, then up and down rows by neuron" : "gate, up, down",
        sum->ordered_by_profile ? "hot experts first" : "experts in the file's order",
        Mib(sum->resident_bytes).c_str(), Mib(sum->bundle_bytes).c_str());
  } else {
    std::printf(
        "wrote %s: %lld layers x %lld neurons, records of %llu bytes (%llu of rows%s), %s\n"
        "resident %s, bundles %s\n",
        o.output.c_str(), static_cast<long long>(sum->n_layer), static_cast<long long>(sum->n_ff),
        static_cast<unsigned long long>(sum->record_bytes),
        static_cast<unsigned long long>(sum->row_bytes),
        sum->gate_in_bundle ? ": gate, up, down" : ": up, down; gate resident",
        sum->ordered_by_profile ? "hot neurons first" : "neurons in the file's order",
        Mib(sum->resident_bytes).c_str(), Mib(sum->bundle_bytes).c_str());
  }
  if (!sum->expert_coverage.empty()) {
    std::printf("routing on the calibration text (mean over layers):");
    for (const auto& [experts, routings] : sum->expert_coverage) {
      std::printf(" the hottest %.0f%% of experts took %.0f%% of routings;", 100 * experts,
                  100 * routings);
    }
    std::printf("\n");
  }
  if (sum->active_share > 0) {
    std::printf("the predictor chose %.1f%% of the neurons per token on the calibration text\n",
                100 * sum->active_share);
  }
  if (!sum->miss_curve.empty()) {
    std::printf("miss curve on the calibration text (cache share of bundles: misses per %s):",
                sum->n_expert > 0 ? "expert" : "neuron");
    for (const MissCurvePoint& pt : sum->miss_curve) {
      std::printf(" %.2f:%.3f", pt.cache_fraction, pt.miss_rate);
    }
    std::printf("\n");
    if (sum->optimum_curve.size() == sum->miss_curve.size()) {
      std::printf("its hits over the optimum's (Belady, same text):");
      for (size_t i = 0; i < sum->miss_curve.size(); ++i) {
        const double best = 1 - sum->optimum_curve[i].miss_rate;
        if (best > 0) {
          std::printf(" %.2f:%.2f", sum->miss_curve[i].cache_fraction,
                      (1 - sum->miss_curve[i].miss_rate) / best);
        }
      }
      std::printf("\n");
    }
  }
  return 0;
}

}  // namespace sparrow::tools
