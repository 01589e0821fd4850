#include "engine/tools/mkmodel_command.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <thread>

#include "engine/tools/cli_checks.h"
#include "engine/tools/mkmodel_balance.h"
#include "engine/tools/mkmodel_generate.h"

namespace sparrow::tools {

void RegisterMkModelCommand(CLI::App& app, MkModelOptions& o, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "mkmodel", "Write a synthetic random-weight GGUF with a real model's shape (for benchmarks)");
  cmd->add_option("--shape", o.shape, "Model shape: " + KnownShapeNames())->required();
  cmd->add_option("--type", o.type, "Weight type: f16, q8_0, q4_0, q4_k_m")->capture_default_str();
  cmd->add_option("-o,--output", o.out, "Path of the GGUF file to write")->required();
  cmd->add_option("--vocab", o.vocab, "GGUF file whose tokenizer.* keys are copied")
      ->capture_default_str();
  cmd->add_option("--layers", o.layers, "Keep only this many layers (0: all)")
      ->check(ZeroOrMore(1 << 16));
  cmd->add_option("--seed", o.seed, "Random seed of the weights")->capture_default_str();
  cmd->add_option("-t,--threads", o.threads, "Threads (0: all hardware threads)")
      ->check(CLI::Range(0, 256));
  cmd->add_option("--format", o.format,
                  "gguf, or pwri: PowerInfer's sparse format (ffn_down_t and a predictor fc1/fc2 "
                  "that chooses --active of the neurons per token)")
      ->capture_default_str();
  cmd->add_option("--ffn", o.ffn, "pwri: relu (ReLU-gated, arch llama) or drelu (arch bamboo)")
      ->capture_default_str();
  cmd->add_option("--predictor-rank", o.predictor_rank,
                  "pwri: predictor rank, a multiple of 32, >= 128 (0: n_embd/8)")
      ->check(ZeroOrMore(1 << 20));
  cmd->add_option("--active", o.active, "pwri: mean share of neurons predicted active per token")
      ->capture_default_str();
  cmd->add_option("--hot-profile", o.hot_profile,
                  "pwri: neuron activation frequencies, uniform or powerlaw:A (f ~ rank^-A)")
      ->capture_default_str();
  cmd->add_option("--expert-skew", o.expert_skew,
                  "Mixture-of-experts shapes: skew of expert popularity (the expert of rank r "
                  "gets a router logit bias of -S*ln(1+r)); 0: as random as the weights")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 16.0));
  cmd->add_option("--balance-routers", o.balance_routers,
                  "Mixture-of-experts shapes: run the model over this text and remove from each "
                  "router the direction all tokens' router inputs share, so that no expert is "
                  "preferred for it (routing spread as a trained model's load balancing spreads "
                  "it)");
  cmd->add_option("--balance-tokens", o.balance_tokens, "Tokens of --balance-routers to run")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{8}, int64_t{1} << 20));
  cmd->callback([&o, &exit_code] { exit_code = RunMkModel(o); });
}

int RunMkModel(const MkModelOptions& o) {
  SyntheticModelSpec spec;
  auto shape = FindModelShape(o.shape);
  if (!shape) {
    std::fprintf(stderr, "sparrow mkmodel: unknown shape '%s' (known: %s)\n", o.shape.c_str(),
                 KnownShapeNames().c_str());
    return 1;
  }
  auto ftype = ParseModelFileType(o.type);
  if (!ftype) {
    std::fprintf(stderr, "sparrow mkmodel: unknown type '%s' (known: f16, q8_0, q4_0, q4_k_m)\n",
                 o.type.c_str());
    return 1;
  }
  if (o.format != "gguf" && o.format != "pwri") {
    std::fprintf(stderr, "sparrow mkmodel: unknown --format '%s' (known: gguf, pwri)\n",
                 o.format.c_str());
    return 1;
  }
  if (o.ffn != "relu" && o.ffn != "drelu") {
    std::fprintf(stderr, "sparrow mkmodel: unknown --ffn '%s' (known: relu, drelu)\n",
                 o.ffn.c_str());
    return 1;
  }
  auto hot = ParseHotProfile(o.hot_profile);
  if (!hot.ok()) {
    std::fprintf(stderr, "sparrow mkmodel: %s\n", hot.status().ToString().c_str());
    return 1;
  }
  if (o.format != "pwri" && (hot->power > 0.0 || o.ffn != "relu" || o.predictor_rank != 0)) {
    std::fprintf(stderr,
                 "sparrow mkmodel: --ffn, --predictor-rank and --hot-profile need --format pwri\n");
    return 1;
  }
  if ((o.expert_skew > 0 || !o.balance_routers.empty()) && shape->n_expert == 0) {
    std::fprintf(stderr,
                 "sparrow mkmodel: --expert-skew and --balance-routers need a mixture-of-experts "
                 "shape\n");
    return 1;
  }
  if (o.expert_skew > 0 && !o.balance_routers.empty()) {
    std::fprintf(stderr,
                 "sparrow mkmodel: --expert-skew and --balance-routers exclude each other\n");
    return 1;
  }
  spec.expert_skew = o.expert_skew;
  spec.pwri = o.format == "pwri";
  spec.drelu = o.ffn == "drelu";
  spec.predictor_rank = o.predictor_rank;
  spec.active = o.active;
  spec.hot = *hot;
  spec.shape = *shape;
  spec.ftype = *ftype;
  spec.n_layer = o.layers;
  spec.vocab_path = o.vocab;
  spec.out_path = o.out;
  spec.seed = o.seed;
  spec.threads = o.threads > 0
                     ? o.threads
                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  spec.verbose = isatty(STDERR_FILENO) != 0;  // \r progress only makes sense on a terminal
  auto summary = WriteSyntheticModel(spec);
  if (!summary.ok()) {
    std::fprintf(stderr, "sparrow mkmodel: %s\n", summary.status().ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "wrote %s: %s %s, %.1f M parameters, %.1f MiB of tensors, vocab %lld\n",
               o.out.c_str(), o.shape.c_str(), o.type.c_str(), summary->n_params / 1e6,
               summary->data_bytes / 1048576.0, static_cast<long long>(summary->n_vocab));
  if (!o.balance_routers.empty()) {
    auto b = BalanceRouters(o.out, o.balance_routers, o.balance_tokens, spec.threads);
    if (!b.ok()) {
      std::fprintf(stderr, "sparrow mkmodel: %s\n", b.status().ToString().c_str());
      return 1;
    }
    std::fprintf(stderr,
                 "routers balanced: the hottest 10%% of experts took %.0f%% of the routings on "
                 "the text before, %.0f%% after (mean over layers)\n",
                 100 * b->hot10_before, 100 * b->hot10_after);
  }
  if (spec.pwri) {
    std::fprintf(stderr,
                 "predictor aims at %.1f%% of neurons per token; %.1f%% of neurons carry 80%% of "
                 "activations (hot profile %s)\n",
                 100.0 * summary->active, 100.0 * summary->hot_set_80, o.hot_profile.c_str());
  }
  return 0;
}

}  // namespace sparrow::tools
