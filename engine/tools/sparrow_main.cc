// sparrow: the command-line tool for models: generate text, inspect and tokenize GGUF files,
// benchmark a model, write synthetic benchmark models, quantize models, convert models to the
// sparse layout, and plan how a model runs under a memory budget.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "config/version.h"
#include "engine/tools/bench_command.h"
#include "engine/tools/bench_runner.h"
#include "engine/tools/convert_command.h"
#include "engine/tools/generate_command.h"
#include "engine/tools/info_command.h"
#include "engine/tools/mkmodel_command.h"
#include "engine/tools/perplexity_command.h"
#include "engine/tools/plan_command.h"
#include "engine/tools/profile_command.h"
#include "engine/tools/profile_hw_command.h"
#include "engine/tools/quantize_command.h"
#include "engine/tools/shard_plan_command.h"
#include "engine/tools/tokenize_command.h"

int main(int argc, char** argv) {
  // The engine's log lines (the neuron cache's decisions) go to stderr: stdout carries the
  // commands' output, JSON included.
  spdlog::set_default_logger(spdlog::stderr_color_mt("sparrow"));
  CLI::App app{
      "sparrow: run and inspect GGUF language models on the CPU.\n"
      "Examples:\n"
      "  sparrow generate -m model.gguf -p \"Once upon a time\" -n 48 --temp 0\n"
      "  sparrow info model.gguf\n"
      "  sparrow tokenize -m model.gguf \"Hello world\"\n"
      "  sparrow bench -m model.gguf -p 512 -n 128 -t 1,2 -r 5\n"
      "  sparrow mkmodel --shape llama-3.2-1b --type q4_0 -o /tmp/l1b-q4_0.gguf\n"
      "  sparrow quantize -m model-f32.gguf -o model-q4_k_m.gguf --type q4_k_m\n"
      "  sparrow perplexity -m model.gguf -f text.txt -c 512\n"
      "  sparrow profile -m model.gguf -f calibration.txt -o model.profile\n"
      "  sparrow generate -m model.gguf --profile model.profile --sparsity 0.5 -p \"Hello\"\n"
      "  sparrow convert -m model.pwri.gguf -o model.sparrow.gguf\n"
      "  sparrow profile-hw -m model.sparrow.gguf\n"
      "  sparrow plan -m model.sparrow.gguf --profile model.profile --budget-mb 2048\n"
      "  sparrow plan -m model.sparrow.gguf --profile model.profile --budget-mb 2048 "
      "--objective memory --min-tok-s 5 --json\n"
      "  sparrow shard-plan -m model.gguf --memory-mb 1400 --device laptop:6000:2:300 "
      "--device board:1400:0.5:100"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("sparrow ") + sparrow::kSparrowVersion);
  int exit_code = 0;
  sparrow::tools::GenerateCommandOptions generate;
  sparrow::tools::RegisterGenerateCommand(app, generate, exit_code);
  sparrow::tools::InfoOptions info;
  sparrow::tools::RegisterInfoCommand(app, info, exit_code);
  sparrow::tools::TokenizeOptions tokenize;
  sparrow::tools::RegisterTokenizeCommand(app, tokenize, exit_code);
  sparrow::tools::BenchOptions bench;
  bool bench_json = false;
  sparrow::tools::RegisterBenchCommand(app, bench, bench_json, exit_code);
  sparrow::tools::MkModelOptions mkmodel;
  sparrow::tools::RegisterMkModelCommand(app, mkmodel, exit_code);
  sparrow::tools::QuantizeOptions quantize;
  sparrow::tools::RegisterQuantizeCommand(app, quantize, exit_code);
  sparrow::tools::PerplexityOptions perplexity;
  sparrow::tools::RegisterPerplexityCommand(app, perplexity, exit_code);
  sparrow::tools::ProfileOptions profile;
  sparrow::tools::RegisterProfileCommand(app, profile, exit_code);
  sparrow::tools::ConvertOptions convert;
  sparrow::tools::RegisterConvertCommand(app, convert, exit_code);
  sparrow::tools::ProfileHwOptions profile_hw;
  sparrow::tools::RegisterProfileHwCommand(app, profile_hw, exit_code);
  sparrow::tools::PlanCommandOptions plan;
  sparrow::tools::RegisterPlanCommand(app, plan, exit_code);
  sparrow::tools::ShardPlanOptions shard_plan;
  sparrow::tools::RegisterShardPlanCommand(app, shard_plan, exit_code);
  // CLI11 would answer a misspelled command, or none, with "A subcommand is required".
  if (argc == 1) {
    std::fprintf(stderr, "sparrow: give a command (sparrow --help lists them)\n");
    return static_cast<int>(CLI::ExitCodes::RequiredError);
  }
  if (argv[1][0] != '-') {
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      known = known || sub->check_name(argv[1]);
    }
    if (!known) {
      std::fprintf(stderr, "sparrow: unknown command '%s' (sparrow --help lists the commands)\n",
                   argv[1]);
      return static_cast<int>(CLI::ExitCodes::ExtrasError);
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}
