#include "engine/tools/bench_report.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace sparrow::tools {
namespace {

std::string Format(const char* fmt, double a, double b = 0) {
  char buf[96];
  std::snprintf(buf, sizeof buf, fmt, a, b);
  return buf;
}

std::string Row(const std::vector<std::string>& cells) {
  std::string out = "|";
  for (const std::string& c : cells) out += " " + c + " |";
  return out + "\n";
}

}  // namespace

std::string BenchReportTable(const BenchReport& r) {
  const BenchModelInfo& m = r.model;
  std::string out;
  out += Row({"model", "size", "params", "threads", "test", "t/s (median)", "± stddev", "min",
              "max", "roofline", "ffn"});
  out += "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const BenchResult& t : r.results) {
    out += Row({m.name + " " + m.type_name, Format("%.2f MiB", m.size_bytes / 1048576.0),
                Format("%.2f M", m.n_params / 1e6), std::to_string(t.threads), t.test,
                Format("%.2f", t.ts.median), Format("%.2f", t.ts.stddev), Format("%.2f", t.ts.min),
                Format("%.2f", t.ts.max),
                t.roofline_fraction > 0 ? Format("%.1f %%", 100 * t.roofline_fraction) : "-",
                t.n_gen > 0 ? t.ffn_mode + Format(" %.0f %%", 100 * t.active_fraction) : "-"});
  }
  out += "\n";
  // A sparse run reads fewer rows than the dense pass: its own figure, beside the dense one.
  std::string reads;
  for (const BenchResult& t : r.results) {
    if (t.n_gen == 0 || t.ffn_mode == "dense" || t.weight_bytes_per_token == 0) continue;
    reads += Format("weights read per token: %.2f MiB", t.weight_bytes_per_token / 1048576.0) +
             " in " + t.test + " t=" + std::to_string(t.threads) + " (" + t.ffn_mode +
             Format(", %.0f %% of FFN neurons; dense: %.2f MiB)\n", 100 * t.active_fraction,
                    m.weight_bytes_per_token / 1048576.0);
  }
  if (reads.empty()) {
    reads = Format("weights read per token: %.2f MiB\n", m.weight_bytes_per_token / 1048576.0);
  }
  out += reads + Format("peak RSS: %.1f MiB\n", r.peak_rss_bytes / 1048576.0);
  for (const BandwidthResult& b : r.bandwidth) {
    out += "read bandwidth, " + std::to_string(b.threads) +
           " thread(s): " + Format("%.2f GB/s (best of %.0f", b.best_bytes_per_s / 1e9, b.reps) +
           Format(" reads of %.0f MiB)\n", b.buffer_bytes / 1048576.0);
  }
  for (const BenchResult& t : r.results) {
    if (!t.cache) continue;
    out += "neuron cache, " + t.test + " t=" + std::to_string(t.threads) + ": " +
           Format("hit rate %.1f %%, ", 100 * t.cache->hit_rate) +
           Format("%.1f KiB and %.1f reads from flash per token, ",
                  t.cache->flash_bytes_per_token / 1024, t.cache->flash_reads_per_token) +
           Format("%.1f ms per token waiting for them, ", t.cache->wait_ms_per_token) +
           Format("%.1f MiB resident\n", t.cache->resident_bytes / 1048576.0);
  }
  out += "cpu: " + r.cpu + "\n";
  return out;
}

std::string BenchReportJson(const BenchReport& r) {
  const BenchModelInfo& m = r.model;
  nlohmann::json j;
  j["model"] = {{"filename", m.path},
                {"name", m.name},
                {"type", m.type_name},
                {"arch", m.arch},
                {"size", m.size_bytes},
                {"n_params", m.n_params},
                {"weight_bytes_per_token", m.weight_bytes_per_token},
                {"n_vocab", m.n_vocab},
                {"n_layer", m.n_layer},
                {"n_embd", m.n_embd}};
  j["cpu"] = r.cpu;
  j["peak_rss_bytes"] = r.peak_rss_bytes;
  j["bandwidth"] = nlohmann::json::array();
  for (const BandwidthResult& b : r.bandwidth) {
    j["bandwidth"].push_back({{"n_threads", b.threads},
                              {"buffer_bytes", b.buffer_bytes},
                              {"reps", b.reps},
                              {"bytes_per_s", b.best_bytes_per_s}});
  }
  j["results"] = nlohmann::json::array();
  for (const BenchResult& t : r.results) {
    nlohmann::json x = {{"test", t.test},
                        {"n_threads", t.threads},
                        {"n_prompt", t.n_prompt},
                        {"n_gen", t.n_gen},
                        {"samples_ns", t.samples_ns},
                        {"samples_ts", t.samples_ts},
                        {"avg_ts", t.ts.mean},
                        {"median_ts", t.ts.median},
                        {"stddev_ts", t.ts.stddev},
                        {"min_ts", t.ts.min},
                        {"max_ts", t.ts.max},
                        {"bandwidth_bytes_per_s", t.bandwidth_bytes_per_s}};
    if (t.n_gen > 0) {
      x["sparse"] = {{"mode", t.ffn_mode}, {"active_fraction", t.active_fraction}};
      if (t.cache) {
        x["sparse"]["cache"] = {{"hit_rate", t.cache->hit_rate},
                                {"flash_bytes_per_token", t.cache->flash_bytes_per_token},
                                {"flash_reads_per_token", t.cache->flash_reads_per_token},
                                {"flash_wait_ms_per_token", t.cache->wait_ms_per_token},
                                {"prefetch_reads_per_token", t.cache->prefetch_reads_per_token},
                                {"prefetch_accuracy", t.cache->prefetch_accuracy},
                                {"resident_bytes", t.cache->resident_bytes}};
      }
      x["weight_bytes_per_token"] = t.weight_bytes_per_token;
    }
    x["roofline_fraction"] =
        t.n_gen > 0 && t.bandwidth_bytes_per_s > 0 ? nlohmann::json(t.roofline_fraction) : nullptr;
    j["results"].push_back(std::move(x));
  }
  return j.dump(2);
}

}  // namespace sparrow::tools
