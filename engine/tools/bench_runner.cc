#include "engine/tools/bench_runner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "engine/kernels/dequantize.h"
#include "engine/kernels/thread_pool.h"
#include "engine/model/model.h"
#include "engine/runtime/forward_pass.h"
#include "engine/runtime/kv_cache.h"
#include "engine/sparse/sparse_plan.h"
#include "engine/tokenizer/tokenizer.h"

namespace sparrow::tools {
namespace {

using Clock = std::chrono::steady_clock;

std::string FileTypeName(uint64_t ftype) {
  switch (ftype) {
    case 0:
      return "F32";
    case 1:
      return "F16";
    case 2:
      return "Q4_0";
    case 3:
      return "Q4_1";
    case 7:
      return "Q8_0";
    case 8:
      return "Q5_0";
    case 9:
      return "Q5_1";
    case 14:
      return "Q4_K - Small";
    case 15:
      return "Q4_K - Medium";
    case 16:
      return "Q5_K - Small";
    case 17:
      return "Q5_K - Medium";
    case 18:
      return "Q6_K";
    case 32:
      return "BF16";
    default:
      return "ftype " + std::to_string(ftype);
  }
}

// The matrix's own bytes (a converted file's rows are strided views into its records).
uint64_t MatrixBytes(const kernels::WeightMatrix& w) {
  if (w.data == nullptr) return 0;
  return static_cast<uint64_t>(w.rows) * kernels::RowBytes(w.type, w.cols);
}

BenchModelInfo DescribeModel(const Model& model, const std::string& path) {
  BenchModelInfo info;
  const GgufFile& f = model.file();
  const ModelConfig& c = model.config();
  info.path = path;
  info.name = c.name.empty() ? path.substr(path.find_last_of('/') + 1) : c.name;
  auto ftype = f.GetUInt("general.file_type");
  // Without general.file_type, name the type of the first attention matrix instead.
  if (ftype.ok()) {
    info.type_name = FileTypeName(*ftype);
  } else if (!model.weights().layers.empty()) {
    info.type_name = std::string(TensorTypeName(model.weights().layers[0].wq.type));
  }
  info.arch = std::string(c.arch->name);
  for (const GgufTensorInfo& t : f.tensors()) {
    info.size_bytes += t.n_bytes;
    info.n_params += t.n_elements;
  }
  const ModelWeights& w = model.weights();
  info.weight_bytes_per_token = MatrixBytes(w.output);
  for (size_t il = 0; il < w.layers.size(); ++il) {
    const LayerWeights& l = w.layers[il];
    for (const kernels::WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_gate, &l.ffn_up,
                                           &l.ffn_down, &l.ffn_down_t, &l.pred_fc1, &l.pred_fc2}) {
      info.weight_bytes_per_token += MatrixBytes(*m);  // absent ones are empty
    }
    // A mixture of experts reads its router and, on average, its chosen share of the experts.
    if (c.n_expert > 0) {
      // A file of expert bundles holds them in records (their padding is read too).
      const double experts =
          w.bundles ? static_cast<double>(w.bundles->layers[il].record_bytes * c.n_expert)
                    : static_cast<double>(MatrixBytes(l.ffn_gate_exps)) +
                          static_cast<double>(MatrixBytes(l.ffn_up_exps)) +
                          static_cast<double>(MatrixBytes(l.ffn_down_exps));
      info.weight_bytes_per_token +=
          MatrixBytes(l.ffn_gate_inp) +
          static_cast<uint64_t>(experts * static_cast<double>(c.n_expert_used) /
                                static_cast<double>(c.n_expert));
    }
  }
  info.n_vocab = c.n_vocab;
  info.n_layer = c.n_layer;
  info.n_embd = c.n_embd;
  return info;
}

// Weight bytes one decoded token reads when a share `active` of the FFN neurons is computed:
// the rows a sparse policy skips are not read (gate stays whole under CATS, gate and up under
// TEAL's down-only threshold).
uint64_t SparseBytesPerToken(const Model& model, const SparsePlan* plan, double active,
                             uint64_t dense_bytes) {
  if (!plan || plan->policy == SparsePolicy::kExperts) return dense_bytes;
  double skipped = 0;
  for (size_t il = 0; il < model.weights().layers.size(); ++il) {
    const LayerWeights& l = model.weights().layers[il];
    const double gate = MatrixBytes(l.ffn_gate), up = MatrixBytes(l.ffn_up),
                 down = MatrixBytes(plan->down_t[il]);
    double sparse_part = 0;
    switch (plan->policy) {
      case SparsePolicy::kPredictor:
        sparse_part = gate + up + down;
        break;
      case SparsePolicy::kCats:
        sparse_part = up + down;
        break;
      case SparsePolicy::kTealDown:
        sparse_part = down;
        break;
      case SparsePolicy::kExperts:
        break;
    }
    // The transposed copy replaces ffn_down on the sparse path.
    if (plan->policy != SparsePolicy::kPredictor) skipped += MatrixBytes(l.ffn_down) - down;
    skipped += sparse_part * (1 - active);
  }
  return static_cast<uint64_t>(static_cast<double>(dense_bytes) - skipped);
}

std::string CpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "unknown";
}

int32_t BosId(const Model& model) {
  auto bos = model.file().GetUInt("tokenizer.ggml.bos_token_id");
  if (bos.ok() && static_cast<int64_t>(*bos) < model.config().n_vocab) {
    return static_cast<int32_t>(*bos);
  }
  return 1;
}

// One repetition's wall time in seconds; the cache is reused from position 0, which is what
// clearing it amounts to for the forward pass (only positions written in this run are read).
Result<double> TimePrompt(ForwardPass& fp, KvCache& cache, const std::vector<int32_t>& tokens,
                          std::vector<float>& logits) {
  const auto t0 = Clock::now();
  SPARROW_RETURN_IF_ERROR(fp.Run(tokens, 0, cache, /*all_logits=*/false, &logits));
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Decodes `tokens` one at a time from position `depth` (the positions below hold a context).
Result<double> TimeGenerate(ForwardPass& fp, KvCache& cache, const std::vector<int32_t>& tokens,
                            std::vector<float>& logits, int64_t depth = 0) {
  const auto t0 = Clock::now();
  for (size_t i = 0; i < tokens.size(); ++i) {
    SPARROW_RETURN_IF_ERROR(fp.Run(std::span<const int32_t>(&tokens[i], 1),
                                   depth + static_cast<int64_t>(i), cache, false, &logits));
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

BenchResult MakeResult(std::string test, int threads, int64_t n_prompt, int64_t n_gen,
                       const std::vector<double>& seconds, int64_t n_tokens);

// The FFN's mode and the share of neurons it computed since `before` (a tg test's tokens).
void RecordFfn(const FeedForward& ffn, const FfnCounters& before, BenchResult* r) {
  const FfnCounters after = ffn.counters();
  r->ffn_mode = std::string(ffn.mode());
  if (after.neurons_total > before.neurons_total) {
    r->active_fraction = static_cast<double>(after.neurons_computed - before.neurons_computed) /
                         static_cast<double>(after.neurons_total - before.neurons_total);
  }
}

// What the neuron store did between two snapshots, for `tokens` decoded tokens.
BenchResult::CacheUse CacheUseBetween(const NeuronStoreStats& a, const NeuronStoreStats& b,
                                      int64_t tokens) {
  BenchResult::CacheUse u;
  const auto found = static_cast<double>((b.hot_hits - a.hot_hits) + (b.cache.hits - a.cache.hits));
  const auto missed = static_cast<double>(b.cache.misses - a.cache.misses);
  u.hit_rate = found + missed > 0 ? found / (found + missed) : 0;
  const double n = static_cast<double>(std::max<int64_t>(1, tokens));
  u.flash_bytes_per_token = static_cast<double>(b.reads.bytes - a.reads.bytes) / n;
  u.flash_reads_per_token = static_cast<double>(b.reads.reads - a.reads.reads) / n;
  u.wait_ms_per_token = static_cast<double>(b.wait_micros - a.wait_micros) / 1000.0 / n;
  const auto guessed = static_cast<double>(b.prefetch_reads - a.prefetch_reads);
  u.prefetch_reads_per_token = guessed / n;
  u.prefetch_accuracy =
      guessed > 0 ? static_cast<double>(b.prefetch_used - a.prefetch_used) / guessed : 0;
  u.resident_bytes = b.held_bytes();
  return u;
}

std::optional<NeuronStoreStats> StoreStats(const SparsePlan* plan) {
  if (!plan || !plan->store) return std::nullopt;
  return plan->store->stats();
}

// B sequences decoding in lockstep: each step is one RunBatch of B one-token segments.
Result<BenchResult> BenchDecodeBatch(const BenchOptions& o, const Model& model, ForwardPass& fp,
                                     const SparsePlan* plan,
                                     const std::vector<std::vector<int32_t>>& gens, int threads,
                                     const KvTypes& kv_types) {
  const ModelConfig& c = model.config();
  const int64_t b = o.decode_batch;
  std::vector<ContiguousKvCache> caches;
  for (int64_t i = 0; i < b; ++i) caches.emplace_back(c.n_layer, o.n_gen, c.kv_dim(), kv_types);
  std::vector<float> logits;
  std::vector<double> seconds;
  const FfnCounters before = fp.ffn().counters();
  std::optional<NeuronStoreStats> store_before;
  for (int rep = 0; rep <= o.reps; ++rep) {
    if (rep == 1) store_before = StoreStats(plan);
    const auto t0 = Clock::now();
    for (int64_t pos = 0; pos < o.n_gen; ++pos) {
      std::vector<ForwardPass::Segment> segs;
      for (int64_t i = 0; i < b; ++i) {
        // Each sequence its own token (a shifted copy of the stream), so the choices differ.
        const int32_t* tok = &gens[rep][(pos + i) % o.n_gen];
        segs.push_back({&caches[i], {tok, 1}, pos, false});
      }
      SPARROW_RETURN_IF_ERROR(fp.RunBatch(segs, &logits));
    }
    if (rep > 0) seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  BenchResult r = MakeResult("tg" + std::to_string(o.n_gen) + "x" + std::to_string(b), threads, 0,
                             o.n_gen, seconds, o.n_gen * b);
  RecordFfn(fp.ffn(), before, &r);
  if (store_before)
    r.cache = CacheUseBetween(*store_before, *StoreStats(plan), o.n_gen * b * o.reps);
  return r;
}

BenchResult MakeResult(std::string test, int threads, int64_t n_prompt, int64_t n_gen,
                       const std::vector<double>& seconds, int64_t n_tokens) {
  BenchResult r;
  r.test = std::move(test);
  r.threads = threads;
  r.n_prompt = n_prompt;
  r.n_gen = n_gen;
  for (double s : seconds) {
    r.samples_ns.push_back(s * 1e9);
    r.samples_ts.push_back(s > 0 ? static_cast<double>(n_tokens) / s : 0.0);
  }
  r.ts = Summarize(r.samples_ts);
  return r;
}

// `path`'s text as the model's tokenizer reads it, with its BOS.
Result<std::vector<int32_t>> TextTokens(const Model& model, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot read the text");
  std::stringstream ss;
  ss << in.rdbuf();
  SPARROW_ASSIGN_OR_RETURN(auto tokenizer, LoadTokenizer(model.file()));
  return tokenizer->Tokenize(ss.str(), /*add_special=*/true);
}

std::string ThreadsText(int n) {
  return std::to_string(n) + (n == 1 ? " thread" : " threads");
}

}  // namespace

Result<BenchReport> RunBench(const BenchOptions& o) {
  if (o.n_prompt < 0 || o.n_gen < 0 || (o.n_prompt == 0 && o.n_gen == 0)) {
    return InvalidArgument("-p and -n must be >= 0 and not both 0");
  }
  if (o.reps < 1) return InvalidArgument("-r must be >= 1, got " + std::to_string(o.reps));
  if (o.n_depth < 0) return InvalidArgument("-d must be >= 0, got " + std::to_string(o.n_depth));
  if (o.threads.empty()) return InvalidArgument("-t names no thread count");
  for (int t : o.threads) {
    if (t < 1) return InvalidArgument("-t: thread count " + std::to_string(t) + " is below 1");
  }
  SPARROW_ASSIGN_OR_RETURN(auto model, Model::Load(o.model));
  BenchReport report;
  report.model = DescribeModel(*model, o.model);
  report.cpu = CpuModelName();
  const ModelConfig& c = model->config();
  SPARROW_ASSIGN_OR_RETURN(const KvTypes kv_types, ParseKvTypeFlags(o.kv, c.head_dim));
  const int64_t n_ctx = std::max(o.n_prompt, o.n_depth + o.n_gen);
  if (n_ctx > c.n_ctx_train) {
    return InvalidArgument(o.model + ": -p/-d/-n of " + std::to_string(n_ctx) +
                           " exceed the model's context of " + std::to_string(c.n_ctx_train));
  }

  std::vector<int32_t> text;
  if (!o.text_file.empty()) {
    SPARROW_ASSIGN_OR_RETURN(text, TextTokens(*model, o.text_file));
    const size_t need =
        static_cast<size_t>(o.n_prompt + (o.reps + 1) * std::max<int64_t>(0, o.n_gen - 1));
    if (text.size() < need) {
      return InvalidArgument(o.text_file + " gives " + std::to_string(text.size()) +
                             " tokens; -p, -n and -r need " + std::to_string(need));
    }
  }
  // Random valid ids after a BOS, as llama-bench feeds them.
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<int32_t> any_token(0, static_cast<int32_t>(c.n_vocab - 1));
  const int32_t bos = BosId(*model);
  std::vector<int32_t> prompt(o.n_prompt), gen(o.n_gen);
  for (auto* v : {&prompt, &gen}) {
    for (size_t i = 0; i < v->size(); ++i) (*v)[i] = i == 0 ? bos : any_token(rng);
  }
  // Each repetition of a tg test decodes other tokens than the warm-up: a neuron cache must not
  // be measured on the very neurons the warm-up loaded.
  std::vector<std::vector<int32_t>> gens(static_cast<size_t>(o.reps) + 1, gen);
  for (size_t r = 1; r < gens.size(); ++r) {
    for (size_t i = 1; i < gens[r].size(); ++i) gens[r][i] = any_token(rng);
  }
  if (!o.text_file.empty()) {
    // The text in order: the prompt, then each repetition's stretch after a BOS.
    size_t at = 0;
    for (int32_t& t : prompt) t = text[at++];
    for (auto& g : gens) {
      for (size_t i = 1; i < g.size(); ++i) g[i] = text[at++];
    }
  }

  const auto say = [&o](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  // "pp512, 2 threads" as a test starts: the warm-up and the runs to come.
  const auto starting = [&](const std::string& test, int threads) {
    const std::string name = test + ", " + ThreadsText(threads);
    say(name + ": a warm-up, then " + std::to_string(o.reps) +
        (o.reps == 1 ? " timed run" : " timed runs"));
    return name;
  };
  const auto finished = [&](const std::string& name, const BenchResult& r) {
    char speed[48];
    std::snprintf(speed, sizeof speed, ": %.2f t/s (median)", r.ts.median);
    say(name + speed);
  };
  std::vector<float> logits;
  for (int threads : o.threads) {
    kernels::ThreadPool pool(threads);
    SPARROW_ASSIGN_OR_RETURN(auto plan, MakePlanFromFlags(*model, o.sparse, &pool));
    ForwardPass fp(*model, &pool, MakeFeedForward(*model, plan, &pool));
    ContiguousKvCache cache(c.n_layer, n_ctx, c.kv_dim(), kv_types);
    if (o.n_prompt > 0) {
      const std::string test = "pp" + std::to_string(o.n_prompt);
      const std::string name = starting(test, threads);
      std::vector<double> seconds;
      for (int rep = 0; rep <= o.reps; ++rep) {  // rep 0 is the warm-up
        SPARROW_ASSIGN_OR_RETURN(double s, TimePrompt(fp, cache, prompt, logits));
        if (rep > 0) seconds.push_back(s);
      }
      report.results.push_back(MakeResult(test, threads, o.n_prompt, 0, seconds, o.n_prompt));
      finished(name, report.results.back());
    }
    // The context the tg test decodes after: random ids after a BOS, written once (a tg
    // repetition writes only the positions after it).
    const std::string tg =
        "tg" + std::to_string(o.n_gen) + (o.n_depth > 0 ? " @ d" + std::to_string(o.n_depth) : "");
    if (o.n_gen > 0 && o.n_depth > 0) {
      std::vector<int32_t> context(static_cast<size_t>(o.n_depth));
      for (size_t i = 0; i < context.size(); ++i) context[i] = i == 0 ? bos : any_token(rng);
      say("d" + std::to_string(o.n_depth) + ", " + ThreadsText(threads) + ": filling the context");
      constexpr int64_t kChunk = 256;  // as the server prefills: bounded scratch
      for (int64_t at = 0; at < o.n_depth; at += kChunk) {
        const int64_t n = std::min(kChunk, o.n_depth - at);
        SPARROW_RETURN_IF_ERROR(
            fp.Run(std::span<const int32_t>(&context[static_cast<size_t>(at)], n), at, cache,
                   /*all_logits=*/false, &logits));
      }
    }
    if (o.n_gen > 0) {
      const std::string name = starting(tg, threads);
      std::vector<double> seconds;
      const FfnCounters before = fp.ffn().counters();
      std::optional<NeuronStoreStats> store_before;
      for (int rep = 0; rep <= o.reps; ++rep) {
        if (rep == 1) store_before = StoreStats(plan.get());
        SPARROW_ASSIGN_OR_RETURN(double s, TimeGenerate(fp, cache, gens[rep], logits, o.n_depth));
        if (rep > 0) seconds.push_back(s);
      }
      BenchResult r = MakeResult(tg, threads, 0, o.n_gen, seconds, o.n_gen);
      RecordFfn(fp.ffn(), before, &r);
      r.weight_bytes_per_token = SparseBytesPerToken(*model, plan.get(), r.active_fraction,
                                                     report.model.weight_bytes_per_token);
      if (store_before) {
        r.cache = CacheUseBetween(*store_before, *StoreStats(plan.get()), o.n_gen * o.reps);
      }
      report.results.push_back(std::move(r));
      finished(name, report.results.back());
    }
    if (o.n_gen > 0 && o.decode_batch > 1) {
      const std::string name =
          starting("tg" + std::to_string(o.n_gen) + "x" + std::to_string(o.decode_batch), threads);
      SPARROW_ASSIGN_OR_RETURN(
          BenchResult r, BenchDecodeBatch(o, *model, fp, plan.get(), gens, threads, kv_types));
      report.results.push_back(std::move(r));
      finished(name, report.results.back());
    }
  }
  // Taken before the probe allocates its buffer, so it is the model's footprint.
  report.peak_rss_bytes = PeakRssBytes();

  if (o.bandwidth) {
    for (int threads : o.threads) {
      say("read bandwidth, " + ThreadsText(threads) + ": " + std::to_string(o.bandwidth_reps) +
          " reads of " + std::to_string(o.bandwidth_mib) + " MiB");
      report.bandwidth.push_back(
          MeasureReadBandwidth(threads, o.bandwidth_mib << 20, o.bandwidth_reps));
    }
    for (BenchResult& r : report.results) {
      for (const BandwidthResult& b : report.bandwidth) {
        if (b.threads == r.threads) r.bandwidth_bytes_per_s = b.best_bytes_per_s;
      }
      if (r.n_gen > 0 && r.bandwidth_bytes_per_s > 0) {
        r.roofline_fraction =
            static_cast<double>(r.weight_bytes_per_token) * r.ts.median / r.bandwidth_bytes_per_s;
      }
    }
  }
  return report;
}

}  // namespace sparrow::tools
