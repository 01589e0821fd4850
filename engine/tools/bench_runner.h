#pragma once
// RunBench: llama-bench-style throughput of one model: prompt processing (one forward pass of
// n_prompt tokens) and text generation (n_gen single-token steps after a BOS) per thread
// count, each repeated after a warm-up, with the read bandwidth of the machine so generation
// speed can be put against its memory roofline. Not thread-safe (it uses all the threads it
// is given); run one at a time.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/common/result.h"
#include "engine/tools/bench_bandwidth.h"
#include "engine/tools/bench_stats.h"
#include "engine/tools/kv_type_flags.h"
#include "engine/tools/sparsity_flags.h"

namespace sparrow::tools {

struct BenchOptions {
  std::string model;
  std::string io_file;  // set: the flash read probe (bench_io.h) instead of a model
  std::vector<int> io_depths = {1, 4, 16, 64};  // its queue depths
  int64_t n_prompt = 512;
  int64_t n_gen = 128;
  // llama-bench's -d: the tg test decodes after this many positions already in the KV cache
  // (filled once per thread count, untimed), so attention reads a context that long ("tg64 @
  // d4096"); 0: from an empty cache.
  int64_t n_depth = 0;
  std::vector<int> threads = {1};
  int reps = 5;
  bool bandwidth = true;
  uint64_t bandwidth_mib = 512;  // size of the probe's buffer
  int bandwidth_reps = 5;
  uint64_t seed = 42;  // random prompt tokens
  // Set: prompt and decoded tokens are this text's, in order (each repetition decodes the next
  // stretch), instead of random ids: a neuron cache then sees the locality of real text, as the
  // miss curve of `sparrow convert --calibrate` or a profile does.
  std::string text_file;
  SparsityFlags sparse;
  KvTypeFlags kv;  // the KV cache's types
  // > 1: also a "tg<n>x<B>" test, B sequences decoding n tokens each in lockstep (one forward
  // pass per step for all of them, as the scheduler batches them); tokens/s counts all B.
  int64_t decode_batch = 1;
  // Set: told one line as each test starts and as it ends ("tg128, 1 thread: 12.3 t/s"), so a
  // run of a minute is not silent.
  std::function<void(const std::string&)> progress;
};

struct BenchModelInfo {
  std::string path;
  std::string name;             // general.name, or the file name
  std::string type_name = "?";  // "Q8_0", "Q4_K - Medium", ...
  std::string arch;
  uint64_t size_bytes = 0;  // all tensor bytes
  uint64_t n_params = 0;
  // Bytes of every weight matrix one token's dense forward pass reads (the output matrix
  // included, the embedding table excluded unless it doubles as the output).
  uint64_t weight_bytes_per_token = 0;
  int64_t n_vocab = 0;
  int64_t n_layer = 0;
  int64_t n_embd = 0;
};

struct BenchResult {
  std::string test;  // "pp512" / "tg128"
  int threads = 0;
  int64_t n_prompt = 0;
  int64_t n_gen = 0;
  std::vector<double> samples_ns;
  std::vector<double> samples_ts;  // tokens per second of each repetition
  SampleStats ts;
  double bandwidth_bytes_per_s = 0;     // at this thread count; 0 when not measured
  double roofline_fraction = 0;         // tg only: weight bytes * tok/s / bandwidth
  std::string ffn_mode = "dense";       // tg: the FFN's mode (dense, cats, teal-down, predictor)
  double active_fraction = 1;           // tg: share of FFN neurons computed per token
  uint64_t weight_bytes_per_token = 0;  // tg: what the FFN's mode reads (sparse: fewer rows)
  // tg under --cache-mb, over the timed repetitions: share of bundles found in memory (hot
  // segment or cache), and what came from flash per token.
  struct CacheUse {
    double hit_rate = 0;
    double flash_bytes_per_token = 0;
    double flash_reads_per_token = 0;
    double wait_ms_per_token = 0;  // the step waited for flash (reads compute did not hide)
    // Read-ahead (MoE files): records read on a guess per token, and the share of them the
    // next layer then used.
    double prefetch_reads_per_token = 0;
    double prefetch_accuracy = 0;
    uint64_t resident_bytes = 0;
  };
  std::optional<CacheUse> cache;
};

struct BenchReport {
  BenchModelInfo model;
  std::vector<BenchResult> results;
  std::vector<BandwidthResult> bandwidth;
  uint64_t peak_rss_bytes = 0;  // before the bandwidth probe's buffer
  std::string cpu;              // /proc/cpuinfo model name
};

// Loads the model and measures. Errors name the model file or the option at fault.
Result<BenchReport> RunBench(const BenchOptions& opts);

}  // namespace sparrow::tools
