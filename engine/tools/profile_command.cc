#include "engine/tools/profile_command.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine/kernels/thread_pool.h"
#include "engine/model/gguf_file_writer.h"
#include "engine/model/model.h"
#include "engine/runtime/dense_ffn.h"
#include "engine/runtime/forward_pass.h"
#include "engine/sparse/activation_calibrator.h"
#include "engine/sparse/miss_curve.h"
#include "engine/sparse/predictor_trainer.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tools/cli_checks.h"

namespace sparrow::tools {
namespace {

namespace pf = profile_format;

int Fail(const std::string& message) {
  std::fprintf(stderr, "sparrow profile: %s\n", message.c_str());
  return 1;
}

std::vector<float> DefaultLevels() {
  std::vector<float> levels;
  for (int i = 1; i <= 19; ++i) levels.push_back(0.05f * static_cast<float>(i));
  return levels;
}

std::string Fmt(const char* fmt, double v) {
  char buf[160];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

}  // namespace

void RegisterProfileCommand(CLI::App& app, ProfileOptions& o, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "profile",
      "Measure a model's FFN activations on a calibration text and write its profile (for "
      "--sparsity), or print one with --show");
  cmd->add_option("-m,--model", o.model, "Path of the GGUF model");
  cmd->add_option("-f,--file", o.text_file, "Calibration text (UTF-8)");
  cmd->add_option("-o,--output", o.output, "Path of the profile to write");
  cmd->add_option("--show", o.show, "Print this profile and exit");
  cmd->add_option("-c,--ctx-size", o.n_ctx, "Tokens per calibration window")
      ->check(CLI::Range(int64_t{8}, int64_t{1} << 20))
      ->capture_default_str();
  cmd->add_option("--tokens", o.max_tokens, "Calibration tokens used at most (0: all)")
      ->check(ZeroOrMore(1e12))
      ->capture_default_str();
  cmd->add_option("-t,--threads", o.threads, "Compute threads (0: all hardware threads)")
      ->check(CLI::Range(0, 256));
  cmd->add_flag("--train-predictor", o.train_predictor,
                "Also train a low-rank activation predictor per layer (--sparsity-method "
                "predictor then skips gate rows too)");
  cmd->add_option("--rank", o.predictor_rank, "Predictor rank")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}))
      ->capture_default_str();
  cmd->add_option("--predictor-sparsity", o.predictor_sparsity,
                  "The CATS level whose active neurons the predictor learns")
      ->check(CLI::Range(0.05, 0.95))
      ->capture_default_str();
  cmd->add_option("--predictor-samples", o.predictor_samples,
                  "Calibration tokens per layer the predictor trains on")
      ->check(CLI::Range(int64_t{64}, int64_t{1} << 24))
      ->capture_default_str();
  cmd->add_option("--predictor-recall", o.predictor_recall,
                  "Shift each layer's predictor until it predicts this share of the held-out "
                  "active neurons (0: no shift)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--epochs", o.predictor_epochs, "Predictor training epochs")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->callback([&o, &exit_code] { exit_code = RunProfile(o); });
}

Result<ActivationProfile> CalibrateProfile(const ProfileOptions& o) {
  SPARROW_ASSIGN_OR_RETURN(auto model, Model::Load(o.model));
  const ModelConfig& c = model->config();
  if (c.powerinfer) {
    return InvalidArgument(o.model +
                           ": a PowerInfer file chooses its neurons by its predictors; "
                           "it needs no profile");
  }
  if (c.n_expert > 0) {
    return InvalidArgument(
        o.model +
        ": a mixture-of-experts model is profiled by `sparrow convert --calibrate TEXT`, which "
        "measures how often the router picks each expert (hot experts first in the file) and "
        "writes the expert cache's miss curve for the planner");
  }
  if (c.ffn_kind != FfnKind::kSwiGlu && c.ffn_kind != FfnKind::kGeGlu) {
    return Unsupported(o.model +
                       ": profiles are made for dense SwiGLU and GeGLU models, not yet for '" +
                       std::string(c.arch->name) + "'");
  }
  auto tokenizer = LoadTokenizer(model->file());
  if (!tokenizer.ok()) return tokenizer.status().WithContext(o.model);
  std::ifstream in(o.text_file, std::ios::binary);
  if (!in) return NotFound(o.text_file + ": cannot read the calibration text");
  std::stringstream ss;
  ss << in.rdbuf();
  std::vector<int32_t> tokens = (*tokenizer)->Tokenize(ss.str(), /*add_special=*/true);
  if (o.max_tokens > 0 && static_cast<int64_t>(tokens.size()) > o.max_tokens)
    tokens.resize(o.max_tokens);
  const int64_t n_ctx = std::min(o.n_ctx, c.n_ctx_train);
  if (static_cast<int64_t>(tokens.size()) < n_ctx) {
    return InvalidArgument(o.text_file + ": " + std::to_string(tokens.size()) +
                           " tokens, fewer than one calibration window of " +
                           std::to_string(n_ctx) + " (-c)");
  }

  const int threads = o.threads > 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  kernels::ThreadPool pool(threads);
  const std::vector<float> levels = DefaultLevels();
  ActivationCalibrator calibrator(c, levels);
  auto dense = std::make_unique<DenseFfn>(*model, &pool);
  dense->set_observer(&calibrator);
  ForwardPass fp(*model, &pool, std::move(dense));
  ContiguousKvCache cache(c.n_layer, n_ctx, c.kv_dim());
  std::vector<float> logits;
  const auto windows = static_cast<int64_t>(tokens.size()) / n_ctx;
  const bool progress = isatty(STDERR_FILENO) != 0;
  // Two passes: where the thresholds go, then how often each neuron passes them.
  // The first level skipping at least `share` of the neurons (the last if none does).
  auto level_at_least = [&](double share) {
    size_t k = 0;
    while (k + 1 < levels.size() && levels[k] < share - 1e-6) ++k;
    return k;
  };
  const size_t level = o.train_predictor ? level_at_least(o.predictor_sparsity) : 0;
  if (o.train_predictor) calibrator.CollectSamples(level, o.predictor_samples);
  // The miss curve's trace: the neurons of the 50% level, for the first tokens.
  const size_t miss_level = level_at_least(0.5);
  calibrator.TraceLevel(miss_level, o.miss_tokens);
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t w = 0; w < windows; ++w) {
      SPARROW_RETURN_IF_ERROR(fp.Run({tokens.data() + w * n_ctx, static_cast<size_t>(n_ctx)}, 0,
                                     cache, false, &logits));
      if (progress) {
        std::fprintf(stderr, "\rpass %d/2: window %lld/%lld", pass + 1,
                     static_cast<long long>(w + 1), static_cast<long long>(windows));
      }
    }
    if (pass == 0) calibrator.EndFirstPass();
  }
  if (progress) std::fprintf(stderr, "\n");
  ActivationProfile profile = calibrator.Result();
  if (const NeuronTrace* trace = calibrator.trace(); trace && trace->tokens() >= 8) {
    const std::vector<double> fractions = {0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0};
    // Every policy on the same two halves of the text, each from an empty cache (the ranked
    // ones ranked on the other half, as a served text is not the calibration text).
    const int64_t warmup = trace->tokens() / 8;
    const auto curve =
        ReplayMissCurve(*trace, 4096, fractions, warmup, ReplayPolicy::kTwoQueueLru, 2);
    profile.miss_level = levels[miss_level];
    for (const MissCurvePoint& pt : curve) {
      profile.miss_fraction.push_back(static_cast<float>(pt.cache_fraction));
      profile.miss_rate.push_back(static_cast<float>(pt.miss_rate));
    }
    // The same trace under the other policies, for the report and the planner.
    for (auto [policy, rates] :
         {std::pair{ReplayPolicy::kWindow, &profile.miss_rate_window},
          std::pair{ReplayPolicy::kHotHalfAndLru, &profile.miss_rate_hot_half},
          std::pair{ReplayPolicy::kDecayedLfu, &profile.miss_rate_lfu},
          std::pair{ReplayPolicy::kGlobalHot, &profile.miss_rate_global_hot},
          std::pair{ReplayPolicy::kOptimum, &profile.miss_rate_optimum}}) {
      for (const MissCurvePoint& pt : ReplayMissCurve(*trace, 4096, fractions, warmup, policy, 2)) {
        rates->push_back(static_cast<float>(pt.miss_rate));
      }
    }
  }
  if (!o.train_predictor) return profile;
  profile.n_embd = c.n_embd;
  profile.predictor_level = profile.levels[level];
  PredictorTrainingOptions t;
  t.rank = o.predictor_rank;
  t.epochs = o.predictor_epochs;
  t.target_recall = o.predictor_recall;
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const auto& s = calibrator.samples(l);
    if (s.n < 16) return InvalidArgument("too few calibration tokens to train a predictor");
    TrainedPredictor tp = TrainPredictor(s.x, s.label, s.n, c.n_embd, c.n_ff, t, &pool);
    if (progress || o.verbose) {
      std::fprintf(stderr, "predictor layer %lld: recall %.3f precision %.3f predicted %.3f\n",
                   static_cast<long long>(l), tp.recall, tp.precision, tp.predicted);
    }
    ActivationProfile::LayerPredictor lp;
    lp.rank = tp.rank;
    lp.fc1 = std::move(tp.fc1);
    lp.fc2 = std::move(tp.fc2);
    lp.bias = std::move(tp.bias);
    lp.recall = static_cast<float>(tp.recall);
    lp.precision = static_cast<float>(tp.precision);
    lp.predicted = static_cast<float>(tp.predicted);
    profile.predictors.push_back(std::move(lp));
  }
  return profile;
}

Status WriteActivationProfile(const ActivationProfile& p, const std::string& path) {
  GgufFileWriter w;
  w.header().AddString("general.type", "sparrow-activation-profile");
  w.header().AddU32(pf::kVersionKey, pf::kVersion);
  w.header().AddString(pf::kModelKey, p.model_name);
  w.header().AddU32(pf::kTokensKey, static_cast<uint32_t>(std::min<int64_t>(p.tokens, UINT32_MAX)));
  const auto levels = static_cast<uint64_t>(p.levels.size());
  const auto layers = static_cast<uint64_t>(p.n_layer), n_ff = static_cast<uint64_t>(p.n_ff);
  const std::vector<std::pair<const char*, const std::vector<float>*>> tensors = {
      {pf::kLevels, &p.levels},
      {pf::kCatsThreshold, &p.cats_threshold},
      {pf::kTealThreshold, &p.teal_threshold},
      {pf::kHot80, &p.hot80},
      {pf::kFrequency, &p.frequency}};
  w.DeclareTensor(pf::kLevels, TensorType::kF32, {levels});
  w.DeclareTensor(pf::kCatsThreshold, TensorType::kF32, {layers, levels});
  w.DeclareTensor(pf::kTealThreshold, TensorType::kF32, {layers, levels});
  w.DeclareTensor(pf::kHot80, TensorType::kF32, {layers, levels});
  w.DeclareTensor(pf::kFrequency, TensorType::kF32, {n_ff, layers, levels});
  std::vector<float> quality;
  if (!p.predictors.empty()) {
    w.header().AddF32(pf::kPredictorLevelKey, p.predictor_level);
    quality.resize(3 * p.n_layer);
    for (int64_t l = 0; l < p.n_layer; ++l) {
      const auto& lp = p.predictors[l];
      quality[l] = lp.recall;
      quality[p.n_layer + l] = lp.precision;
      quality[2 * p.n_layer + l] = lp.predicted;
      const std::string n = "pred." + std::to_string(l) + ".";
      const auto e = static_cast<uint64_t>(p.n_embd), r = static_cast<uint64_t>(lp.rank);
      w.DeclareTensor(n + "fc1", TensorType::kF32, {e, r});
      w.DeclareTensor(n + "fc2", TensorType::kF32, {r, n_ff});
      w.DeclareTensor(n + "bias", TensorType::kF32, {n_ff});
    }
    w.DeclareTensor(pf::kPredictorQuality, TensorType::kF32, {3, layers});
  }
  if (!p.miss_fraction.empty()) {
    w.header().AddF32(pf::kMissLevelKey, p.miss_level);
    const auto n = static_cast<uint64_t>(p.miss_fraction.size());
    w.DeclareTensor(pf::kMissFraction, TensorType::kF32, {n});
    w.DeclareTensor(pf::kMissRate, TensorType::kF32, {n});
    if (!p.miss_rate_window.empty()) w.DeclareTensor(pf::kMissRateWindow, TensorType::kF32, {n});
    if (!p.miss_rate_hot_half.empty()) {
      w.DeclareTensor(pf::kMissRateHotHalf, TensorType::kF32, {n});
    }
    if (!p.miss_rate_lfu.empty()) w.DeclareTensor(pf::kMissRateLfu, TensorType::kF32, {n});
    if (!p.miss_rate_global_hot.empty()) {
      w.DeclareTensor(pf::kMissRateGlobalHot, TensorType::kF32, {n});
    }
    if (!p.miss_rate_optimum.empty()) {
      w.DeclareTensor(pf::kMissRateOptimum, TensorType::kF32, {n});
    }
  }
  SPARROW_RETURN_IF_ERROR(w.Begin(path));
  for (const auto& [name, values] : tensors) {
    SPARROW_RETURN_IF_ERROR(w.Append(values->data(), values->size() * sizeof(float)));
  }
  for (const auto& lp : p.predictors) {
    for (const std::vector<float>* v : {&lp.fc1, &lp.fc2, &lp.bias})
      SPARROW_RETURN_IF_ERROR(w.Append(v->data(), v->size() * sizeof(float)));
  }
  if (!quality.empty())
    SPARROW_RETURN_IF_ERROR(w.Append(quality.data(), quality.size() * sizeof(float)));
  for (const std::vector<float>* v :
       {&p.miss_fraction, &p.miss_rate, &p.miss_rate_window, &p.miss_rate_hot_half,
        &p.miss_rate_lfu, &p.miss_rate_global_hot, &p.miss_rate_optimum}) {
    if (!v->empty()) SPARROW_RETURN_IF_ERROR(w.Append(v->data(), v->size() * sizeof(float)));
  }
  return w.Finish();
}

std::string DescribeProfile(const ActivationProfile& p) {
  std::string out = "activation profile of '" + p.model_name + "': " + std::to_string(p.n_layer) +
                    " layers of " + std::to_string(p.n_ff) + " FFN neurons, " +
                    std::to_string(p.tokens) + " calibration tokens\n\n";
  // Thresholds at a few levels, and the hot set (share of neurons carrying 80% of activations).
  std::vector<size_t> shown;
  for (float want : {0.25f, 0.5f, 0.7f, 0.9f}) {
    for (size_t k = 0; k < p.levels.size(); ++k) {
      if (std::abs(p.levels[k] - want) < 1e-3f) shown.push_back(k);
    }
  }
  out += "layer";
  for (size_t k : shown) out += Fmt("   cats@%.0f%%", 100 * p.levels[k]);
  for (size_t k : shown) out += Fmt("  hot80@%.0f%%", 100 * p.levels[k]);
  out += "\n";
  for (int64_t l = 0; l < p.n_layer; ++l) {
    out += Fmt("%5.0f", static_cast<double>(l));
    for (size_t k : shown) out += Fmt("  %9.3g", p.cats_threshold[k * p.n_layer + l]);
    for (size_t k : shown) out += Fmt("  %9.1f%%", 100 * p.hot80[k * p.n_layer + l]);
    out += "\n";
  }
  if (!p.predictors.empty()) {
    out += Fmt("\npredictor (trained on the CATS level %.2f), on held-out tokens:\n",
               p.predictor_level);
    out += "layer  rank  recall  precision  predicted\n";
    for (int64_t l = 0; l < p.n_layer; ++l) {
      const auto& lp = p.predictors[l];
      out += Fmt("%5.0f", static_cast<double>(l)) + Fmt("  %4.0f", static_cast<double>(lp.rank)) +
             Fmt("  %6.3f", lp.recall) + Fmt("  %9.3f", lp.precision) +
             Fmt("  %9.3f\n", lp.predicted);
    }
  }
  // How often neurons are active at 50% sparsity: a text histogram per layer, 10 bins of
  // activation frequency, bar length = share of neurons in the bin.
  size_t half = 0;
  for (size_t k = 0; k < p.levels.size(); ++k) {
    if (std::abs(p.levels[k] - 0.5f) < std::abs(p.levels[half] - 0.5f)) half = k;
  }
  out += "\nshare of neurons by how often they are active at" +
         Fmt(" %.0f%% sparsity", 100 * p.levels[half]) +
         ", one column per tenth\n(0-10% of tokens ... 90-100%): ' ' none, . <5%, : <10%, "
         "- <20%, = <30%, + <40%, * <50%, # <70%, % <90%, @ more:\n";
  for (int64_t l = 0; l < p.n_layer; ++l) {
    int64_t bins[10] = {};
    for (int64_t i = 0; i < p.n_ff; ++i) {
      const float f = p.frequency[(half * p.n_layer + l) * p.n_ff + i];
      ++bins[std::min(9, static_cast<int>(f * 10))];
    }
    out += Fmt("layer %3.0f  [", static_cast<double>(l));
    for (int64_t b : bins) {
      const double share = static_cast<double>(b) / static_cast<double>(p.n_ff);
      const double steps[] = {0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 0.9};
      const char* marks = " .:-=+*#%@";
      int m = 0;
      while (m < 9 && share > steps[m]) ++m;
      out.push_back(marks[m]);
    }
    out += "]\n";
  }
  if (!p.miss_fraction.empty()) {
    out +=
        Fmt("\nmiss curve (neurons at sparsity %.2f through the neuron cache): the share of "
            "neurons read from flash",
            p.miss_level);
    const size_t n = p.miss_fraction.size();
    const bool bound = p.miss_rate_optimum.size() == n;
    out += bound ? ", and (in brackets) each policy's hits over the optimum's\n" : "\n";
    std::vector<std::pair<const char*, const std::vector<float>*>> columns = {
        {"two-queue LRU", &p.miss_rate},
        {"LLM in a Flash window", &p.miss_rate_window},
        {"hot half + LRU (--cache-mb's)", &p.miss_rate_hot_half},
        {"LFU, decaying", &p.miss_rate_lfu},
        {"hot over all layers", &p.miss_rate_global_hot},
        {"optimum (Belady)", &p.miss_rate_optimum}};
    std::erase_if(columns, [n](const auto& c) { return c.second->size() != n; });
    out += "  cache";
    for (const auto& [name, v] : columns) out += std::string(" | ") + name;
    out += "\n";
    for (size_t i = 0; i < n; ++i) {
      out += Fmt("  %5.2f", p.miss_fraction[i]);
      for (const auto& [name, v] : columns) {
        out += Fmt("  %.3f", (*v)[i]);
        const double best_hits = bound ? 1.0 - p.miss_rate_optimum[i] : 0;
        if (bound && v != &p.miss_rate_optimum && best_hits > 0) {
          out += Fmt(" (%.2f)", (1.0 - (*v)[i]) / best_hits);
        }
      }
      out += "\n";
    }
  }
  return out;
}

int RunProfile(const ProfileOptions& o) {
  if (!o.show.empty()) {
    auto p = ReadActivationProfile(o.show);
    if (!p.ok()) return Fail(p.status().ToString());
    std::fputs(DescribeProfile(*p).c_str(), stdout);
    return 0;
  }
  if (o.model.empty() || o.text_file.empty() || o.output.empty())
    return Fail("-m MODEL, -f TEXT and -o PROFILE are required (or --show PROFILE)");
  auto p = CalibrateProfile(o);
  if (!p.ok()) return Fail(p.status().ToString());
  if (Status st = WriteActivationProfile(*p, o.output); !st.ok()) return Fail(st.ToString());
  std::fputs(DescribeProfile(*p).c_str(), stderr);
  std::fprintf(stderr, "wrote %s\n", o.output.c_str());
  return 0;
}

}  // namespace sparrow::tools
