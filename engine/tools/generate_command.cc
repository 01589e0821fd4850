#include "engine/tools/generate_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "engine/kernels/thread_pool.h"
#include "engine/model/model.h"
#include "engine/runtime/generate.h"
#include "engine/tokenizer/incremental_detokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tools/cli_checks.h"
#include "engine/tools/scheduled_generate.h"

namespace sparrow::tools {
namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "sparrow generate: %s\n", message.c_str());
  return 1;
}

double PerSecond(int64_t n, double seconds) {
  return seconds > 0 ? static_cast<double>(n) / seconds : 0.0;
}

}  // namespace

void RegisterGenerateCommand(CLI::App& app, GenerateCommandOptions& o, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "generate", "Generate text from a prompt (streams to stdout, speed to stderr)");
  cmd->add_option("-m,--model", o.model, "Path of the GGUF model")->required();
  cmd->add_option("-p,--prompt", o.prompt, "Prompt text (default: empty, i.e. BOS only)");
  cmd->add_option("-f,--file", o.prompt_file, "Read the prompt from this file");
  cmd->add_option("-n,--n-predict", o.n_predict, "Tokens to generate at most")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30))
      ->capture_default_str();
  cmd->add_option("-c,--ctx-size", o.n_ctx, "Context size in tokens (0: model's, at most 4096)")
      ->check(ZeroOrMore(1 << 24))
      ->capture_default_str();
  cmd->add_option("-b,--batch-size", o.n_batch, "Prompt tokens per forward step")
      ->check(AboveZero(1 << 24))
      ->capture_default_str();
  cmd->add_option("-t,--threads", o.threads, "Compute threads (0: all hardware threads)")
      ->check(CLI::Range(0, 256));
  cmd->add_option("--temp", o.sampling.temperature, "Temperature; 0 = greedy")
      ->capture_default_str();
  cmd->add_option("--top-k", o.sampling.top_k, "Keep the k most likely tokens (0 = off)")
      ->capture_default_str();
  cmd->add_option("--top-p", o.sampling.top_p, "Nucleus sampling mass (1 = off)")
      ->capture_default_str();
  cmd->add_option("--min-p", o.sampling.min_p, "Drop tokens below min-p times the best (0 = off)")
      ->capture_default_str();
  cmd->add_option("--repeat-penalty", o.sampling.repeat_penalty, "Repetition penalty (1 = off)")
      ->capture_default_str();
  cmd->add_option("--presence-penalty", o.sampling.presence_penalty, "Presence penalty (0 = off)")
      ->capture_default_str();
  cmd->add_option("--frequency-penalty", o.sampling.frequency_penalty,
                  "Frequency penalty (0 = off)")
      ->capture_default_str();
  cmd->add_option("--repeat-last-n", o.sampling.penalty_last_n,
                  "Tokens the penalties look back over")
      ->capture_default_str();
  cmd->add_option("-s,--seed", o.sampling.seed, "Random seed (default: random)");
  cmd->add_flag(
      "--json", o.json,
      "Print one JSON object (prompt_tokens, tokens, text, timings) instead of streaming");
  cmd->add_flag("--special", o.parse_special,
                "Let special tokens written in the prompt (e.g. <s>) be parsed as such");
  cmd->add_flag("--no-echo", o.no_echo, "Do not print the prompt before the continuation");
  AddSparsityFlags(cmd, o.sparse);
  AddKvTypeFlags(cmd, o.kv);
  AddSpecFlags(cmd, o.spec);
  cmd->callback([&o, &exit_code] { exit_code = RunGenerate(o); });
}

int RunGenerate(const GenerateCommandOptions& o) {
  if (Status st = o.sampling.Validate(); !st.ok()) return Fail(st.message());
  std::string prompt = o.prompt;
  if (!o.prompt_file.empty()) {
    std::ifstream in(o.prompt_file, std::ios::binary);
    if (!in) return Fail(o.prompt_file + ": cannot read the prompt file");
    std::stringstream ss;
    ss << in.rdbuf();
    prompt = ss.str();
  }

  auto model = Model::Load(o.model);
  if (!model.ok()) return Fail(model.status().ToString());
  auto tokenizer = LoadTokenizer((*model)->file());
  if (!tokenizer.ok()) return Fail(tokenizer.status().WithContext(o.model).ToString());
  const Tokenizer& tok = **tokenizer;
  const ModelConfig& cfg = (*model)->config();
  if (tok.n_vocab() != cfg.n_vocab) {
    return Fail(o.model + ": the tokenizer has " + std::to_string(tok.n_vocab()) +
                " tokens but the model " + std::to_string(cfg.n_vocab));
  }

  auto kv_types = ParseKvTypeFlags(o.kv, cfg.head_dim);
  if (!kv_types.ok()) return Fail(kv_types.status().ToString());
  const std::vector<int32_t> prompt_ids =
      tok.Tokenize(prompt, /*add_special=*/true, o.parse_special);
  const int64_t n_ctx = o.n_ctx > 0 ? o.n_ctx : std::min<int64_t>(cfg.n_ctx_train, 4096);
  if (static_cast<int64_t>(prompt_ids.size()) >= n_ctx) {
    return Fail("the prompt is " + std::to_string(prompt_ids.size()) +
                " tokens but the context holds " + std::to_string(n_ctx) +
                "; pass a larger -c or a shorter prompt");
  }
  const int threads = o.threads > 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  kernels::ThreadPool pool(threads);
  auto plan = MakePlanFromFlags(**model, o.sparse, &pool);
  if (!plan.ok()) return Fail(plan.status().ToString());
  ForwardPass fp(**model, &pool, MakeFeedForward(**model, *plan, &pool));
  ContiguousKvCache cache(cfg.n_layer, n_ctx, cfg.kv_dim(), *kv_types);

  GenerateOptions gopts;
  gopts.max_tokens = o.n_predict;
  gopts.n_batch = o.n_batch;
  gopts.sampling = o.sampling;

  IncrementalDetokenizer detok(tok);
  std::vector<int32_t> generated;
  std::string text;
  if (!o.json && !o.no_echo) {
    std::fwrite(prompt.data(), 1, prompt.size(), stdout);
    std::fflush(stdout);
  }
  auto on_token = [&](int32_t id) {
    generated.push_back(id);
    std::string piece = detok.Push(id);
    text += piece;
    if (!o.json && !piece.empty()) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
    return true;
  };
  auto is_eog = [&](int32_t id) { return tok.IsEog(id); };
  auto spec = LoadSpec(o.spec, tok, o.model);
  if (!spec.ok()) return Fail(spec.status().ToString());
  Result<GenerateStats> stats = GenerateStats{};
  std::optional<ScheduledGenerateStats> scheduled;
  if (spec->options.type == SpecType::kNone) {
    stats = Generate(fp, cache, prompt_ids, gopts, is_eog, on_token);
  } else {
    // Speculative decoding is the engine loop's: the verify steps, drafts and rollback.
    SchedulerOptions so;
    so.n_ctx = n_ctx;
    so.kv_types = *kv_types;
    so.is_eog = is_eog;
    so.spec = spec->options;
    so.make_ffn = [p = *plan](const Model& m, kernels::ThreadPool* tp) {
      return MakeFeedForward(m, p, tp);
    };
    auto run = GenerateScheduled(**model, &pool, std::move(so), prompt_ids, gopts,
                                 [&](int32_t id) { on_token(id); });
    if (!run.ok()) return Fail(run.status().ToString());
    scheduled = *run;
    stats = run->base;
  }
  if (!stats.ok()) return Fail(stats.status().ToString());
  std::string tail = detok.Flush();
  text += tail;

  const double pp = PerSecond(stats->prompt_tokens, stats->prompt_seconds);
  const double tg = PerSecond(stats->generated_tokens, stats->generate_seconds);
  if (o.json) {
    nlohmann::json j;
    j["prompt_tokens"] = prompt_ids;
    j["tokens"] = generated;
    j["text"] = text;
    j["finish_reason"] = stats->finish_reason;
    j["timings"] = {{"prompt_n", stats->prompt_tokens},
                    {"prompt_ms", stats->prompt_seconds * 1e3},
                    {"prompt_per_second", pp},
                    {"predicted_n", stats->generated_tokens},
                    {"predicted_ms", stats->generate_seconds * 1e3},
                    {"predicted_per_second", tg},
                    {"threads", threads}};
    j["sparse"] = SparseReport(fp.ffn(), plan->get());
    if (scheduled) {
      j["speculative"] = {{"type", SpecTypeName(spec->options.type)},
                          {"draft_tokens", scheduled->draft_tokens},
                          {"accepted_tokens", scheduled->accepted_draft_tokens},
                          {"steps", scheduled->steps}};
    }
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::fwrite(tail.data(), 1, tail.size(), stdout);
    std::printf("\n");
  }
  std::fflush(stdout);
  const nlohmann::json sparse = SparseReport(fp.ffn(), plan->get());
  std::fprintf(stderr,
               "\nprompt: %lld tokens, %.2f ms, %.1f tokens/s | generation: %lld tokens, %.2f ms, "
               "%.1f tokens/s | %d threads, stop: %s | ffn %s, %.0f%% of neurons per token\n",
               static_cast<long long>(stats->prompt_tokens), stats->prompt_seconds * 1e3, pp,
               static_cast<long long>(stats->generated_tokens), stats->generate_seconds * 1e3, tg,
               threads, stats->finish_reason.c_str(), sparse["mode"].get<std::string>().c_str(),
               100.0 * sparse["active_fraction"].get<double>());
  if (scheduled) {
    std::fprintf(stderr, "speculative (%s): %lld drafted, %lld accepted (%.1f%%), %lld steps\n",
                 SpecTypeName(spec->options.type), static_cast<long long>(scheduled->draft_tokens),
                 static_cast<long long>(scheduled->accepted_draft_tokens),
                 scheduled->draft_tokens > 0
                     ? 100.0 * static_cast<double>(scheduled->accepted_draft_tokens) /
                           static_cast<double>(scheduled->draft_tokens)
                     : 0.0,
                 static_cast<long long>(scheduled->steps));
  }
  return 0;
}

}  // namespace sparrow::tools
