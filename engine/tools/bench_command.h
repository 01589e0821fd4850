#pragma once
// `sparrow bench`: llama-bench-style prompt and generation throughput of a model.
namespace CLI {
class App;
}

namespace sparrow::tools {

struct BenchOptions;

// `opts` must outlive the parse (the subcommand writes into it).
void RegisterBenchCommand(CLI::App& app, BenchOptions& opts, bool& json, int& exit_code);
int RunBenchCommand(const BenchOptions& opts, bool json);

}  // namespace sparrow::tools
