#pragma once
// Renders a BenchReport as llama-bench does: a markdown table for people, or JSON for scripts.
// Pure functions; thread-safe.
#include <string>

#include "engine/tools/bench_runner.h"

namespace sparrow::tools {

std::string BenchReportTable(const BenchReport& report);
// One JSON object: {"model": {...}, "cpu", "peak_rss_bytes", "bandwidth": [...],
// "results": [{"test", "n_threads", "avg_ts", "median_ts", "stddev_ts", ...}]}.
std::string BenchReportJson(const BenchReport& report);

}  // namespace sparrow::tools
