#include "engine/tools/perplexity_command.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "engine/kernels/thread_pool.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tools/perplexity.h"

namespace sparrow::tools {
namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "sparrow perplexity: %s\n", message.c_str());
  return 1;
}

}  // namespace

void RegisterPerplexityCommand(CLI::App& app, PerplexityOptions& o, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "perplexity", "Perplexity of a model on a text, as llama-perplexity computes it");
  cmd->add_option("-m,--model", o.model, "Path of the GGUF model")->required();
  cmd->add_option("-f,--file", o.text_file, "The text (UTF-8)")->required();
  cmd->add_option("-c,--ctx-size", o.n_ctx, "Tokens per chunk; the second half is scored")
      ->check(CLI::Range(int64_t{8}, int64_t{1} << 20))
      ->capture_default_str();
  cmd->add_option("-t,--threads", o.threads, "Compute threads (0: all hardware threads)")
      ->check(CLI::Range(0, 256));
  cmd->add_flag("--json", o.json,
                "Print {\"perplexity\", \"tokens_scored\", \"chunks\", \"sparse\"} on stdout");
  AddSparsityFlags(cmd, o.sparse);
  AddKvTypeFlags(cmd, o.kv);
  cmd->callback([&o, &exit_code] { exit_code = RunPerplexity(o); });
}

int RunPerplexity(const PerplexityOptions& o) {
  std::ifstream in(o.text_file, std::ios::binary);
  if (!in) return Fail(o.text_file + ": cannot read the text");
  std::stringstream ss;
  ss << in.rdbuf();
  auto model = Model::Load(o.model);
  if (!model.ok()) return Fail(model.status().ToString());
  const ModelConfig& c = (*model)->config();
  if (o.n_ctx > c.n_ctx_train) {
    return Fail("-c " + std::to_string(o.n_ctx) + " exceeds the model's context of " +
                std::to_string(c.n_ctx_train));
  }
  auto kv_types = ParseKvTypeFlags(o.kv, c.head_dim);
  if (!kv_types.ok()) return Fail(kv_types.status().ToString());
  auto tokenizer = LoadTokenizer((*model)->file());
  if (!tokenizer.ok()) return Fail(tokenizer.status().WithContext(o.model).ToString());
  const Tokenizer& tok = **tokenizer;
  const std::vector<int32_t> tokens = tok.Tokenize(ss.str(), /*add_special=*/true);
  // llama-perplexity puts BOS at the start of every chunk when the model adds one.
  const std::vector<int32_t> probe = tok.Tokenize("", /*add_special=*/true);
  const int32_t bos = probe.empty() ? -1 : probe.front();

  const int threads = o.threads > 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  kernels::ThreadPool pool(threads);
  SparsityFlags flags = o.sparse;
  auto plan = MakePlanFromFlags(**model, flags, &pool, /*sparse_prompts=*/true);
  if (!plan.ok()) return Fail(plan.status().ToString());
  ForwardPass fp(**model, &pool, MakeFeedForward(**model, *plan, &pool));
  const bool progress = isatty(STDERR_FILENO) != 0;
  auto r = Perplexity(
      fp, c, tokens, o.n_ctx, bos,
      [&](int64_t i, int64_t n, double estimate) {
        if (progress)
          std::fprintf(stderr, "\r[%lld/%lld] %.4f", static_cast<long long>(i + 1),
                       static_cast<long long>(n), estimate);
      },
      *kv_types);
  if (progress) std::fprintf(stderr, "\n");
  if (!r.ok()) return Fail(r.status().ToString());
  const nlohmann::json sparse = SparseReport(fp.ffn(), plan->get());
  if (o.json) {
    nlohmann::json j = {
        {"perplexity", r->perplexity},
        {"tokens_scored", r->tokens_scored},
        {"chunks", r->chunks},
        {"uncertainty", r->uncertainty},
        {"sparse", sparse},
        {"kv_cache",
         {{"k", o.kv.k},
          {"v", o.kv.v},
          {"bytes_per_position", c.n_layer * KvBytesPerLayerPosition(*kv_types, c.kv_dim())}}}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("Final estimate: PPL = %.4f +/- %.5f (%lld tokens scored in %lld chunks of %lld)\n",
                r->perplexity, r->uncertainty, static_cast<long long>(r->tokens_scored),
                static_cast<long long>(r->chunks), static_cast<long long>(o.n_ctx));
  }
  std::fprintf(stderr, "ffn %s, %.1f%% of neurons per token\n",
               sparse["mode"].get<std::string>().c_str(),
               100.0 * sparse["active_fraction"].get<double>());
  return 0;
}

}  // namespace sparrow::tools
