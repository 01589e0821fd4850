#include "engine/tools/bench_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>

#include "engine/tools/bench_io.h"
#include "engine/tools/bench_report.h"
#include "engine/tools/bench_runner.h"
#include "engine/tools/cli_checks.h"

namespace sparrow::tools {

void RegisterBenchCommand(CLI::App& app, BenchOptions& o, bool& json, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Measure prompt (pp) and generation (tg) tokens/s like llama-bench, with the machine's "
      "read bandwidth and each tg result's fraction of that roofline");
  cmd->add_option("-m,--model", o.model, "Path of the GGUF model");
  cmd->add_option("--io", o.io_file,
                  "Instead of a model: probe random reads of this file (a converted model) by "
                  "block size and queue depth, O_DIRECT");
  cmd->add_option("--io-depths", o.io_depths, "Queue depths of --io, comma-separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd->add_option("-p,--n-prompt", o.n_prompt, "Prompt tokens per pp test (0: skip pp)")
      ->capture_default_str()
      ->check(ZeroOrMore(1 << 24));
  cmd->add_option("-n,--n-gen", o.n_gen, "Generated tokens per tg test (0: skip tg)")
      ->capture_default_str()
      ->check(ZeroOrMore(1 << 24));
  cmd->add_option("-d,--n-depth", o.n_depth,
                  "Positions already in the KV cache when a tg test decodes (llama-bench's -d)")
      ->capture_default_str()
      ->check(ZeroOrMore(1 << 24));
  cmd->add_option("-t,--threads", o.threads, "Thread counts, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--text", o.text_file,
                  "Take prompt and decoded tokens from this text, in order, not random ids (a "
                  "neuron cache then sees real text's locality)");
  cmd->add_option("-r,--repetitions", o.reps, "Timed repetitions per test (after one warm-up)")
      ->capture_default_str()
      ->check(AboveZero(1e6));
  cmd->add_flag("--json", json, "Print one JSON object instead of the table");
  cmd->add_option("-b,--decode-batch", o.decode_batch,
                  "Also decode this many sequences in lockstep (test tg<n>x<B>)")
      ->check(CLI::Range(int64_t{1}, int64_t{256}));
  AddSparsityFlags(cmd, o.sparse);
  AddKvTypeFlags(cmd, o.kv);
  cmd->add_flag("!--no-bandwidth", o.bandwidth, "Skip the memory bandwidth probe");
  cmd->add_option("--bandwidth-mib", o.bandwidth_mib, "Size of the bandwidth probe's buffer, MiB")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20));
  cmd->callback([&o, &json, &exit_code] { exit_code = RunBenchCommand(o, json); });
}

int RunBenchCommand(const BenchOptions& o, bool json) {
  if (!o.io_file.empty()) {
    IoBenchOptions io;
    io.path = o.io_file;
    io.queue_depths = o.io_depths;
    auto r = RunIoBench(io);
    if (!r.ok()) {
      std::fprintf(stderr, "sparrow bench --io: %s\n", r.status().ToString().c_str());
      return 1;
    }
    const std::string text = json ? IoBenchJson(*r) + "\n" : IoBenchTable(*r);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  if (o.model.empty()) {
    std::fprintf(stderr, "sparrow bench: give a model (-m) or a file to probe (--io)\n");
    return 1;
  }
  BenchOptions told = o;
  told.progress = [](const std::string& line) {
    std::fprintf(stderr, "bench: %s\n", line.c_str());
  };
  auto report = RunBench(told);
  if (!report.ok()) {
    std::fprintf(stderr, "sparrow bench: %s\n", report.status().ToString().c_str());
    return 1;
  }
  const std::string text = json ? BenchReportJson(*report) + "\n" : BenchReportTable(*report);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace sparrow::tools
