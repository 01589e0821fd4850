#include "engine/sparse/activation_calibrator.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>

#include "engine/common/check.h"
#include "engine/kernels/vec_ops.h"
#include "engine/runtime/dense_ffn.h"

namespace sparrow {
namespace {

constexpr int kStepsPerOctave = 128;
constexpr int kMinExp = -40, kMaxExp = 24;
constexpr int kBins = (kMaxExp - kMinExp) * kStepsPerOctave;

// Bin of a positive finite float: its exponent and top 7 mantissa bits.
int BinOf(float v) {
  const uint32_t bits = std::bit_cast<uint32_t>(v);
  const int exp = static_cast<int>((bits >> 23) & 0xff) - 127;
  if (exp < kMinExp) return 0;
  if (exp >= kMaxExp) return kBins - 1;
  return (exp - kMinExp) * kStepsPerOctave + static_cast<int>((bits >> 16) & 127);
}

float BinLow(int b) {
  const int exp = b / kStepsPerOctave + kMinExp, step = b % kStepsPerOctave;
  return std::ldexp(1.0f + static_cast<float>(step) / kStepsPerOctave, exp);
}

}  // namespace

MagnitudeHistogram::MagnitudeHistogram() : bins_(kBins + 1, 0) {}

void MagnitudeHistogram::Add(float m) {
  ++total_;
  if (!(m > 0)) {
    ++bins_[0];  // zero (and NaN, which no threshold keeps)
    return;
  }
  ++bins_[1 + BinOf(m)];
}

float MagnitudeHistogram::Quantile(double q) const {
  if (total_ == 0 || q <= 0) return 0.0f;
  const double target = q * static_cast<double>(total_);
  double below = static_cast<double>(bins_[0]);
  if (below >= target) return 0.0f;
  for (int b = 0; b < kBins; ++b) {
    const auto n = static_cast<double>(bins_[1 + b]);
    if (below + n >= target) {
      // Linear within the bin: a threshold at the interpolated point keeps the rest.
      const float lo = BinLow(b), hi = BinLow(b + 1);
      return lo + static_cast<float>((target - below) / n) * (hi - lo);
    }
    below += n;
  }
  return BinLow(kBins);
}

ActivationCalibrator::ActivationCalibrator(const ModelConfig& config, std::vector<float> levels)
    : c_(config),
      levels_(std::move(levels)),
      cats_(config.n_layer),
      teal_(config.n_layer),
      counted_tokens_(config.n_layer, 0) {
  SPARROW_CHECK(!levels_.empty() && std::is_sorted(levels_.begin(), levels_.end()));
}

void ActivationCalibrator::CollectSamples(size_t level, int64_t max_samples) {
  SPARROW_CHECK(level < levels_.size());
  sample_level_ = level;
  max_samples_ = max_samples;
  samples_.assign(c_.n_layer, Samples{});
}

void ActivationCalibrator::TraceLevel(size_t level, int64_t max_tokens) {
  SPARROW_CHECK(level < levels_.size());
  trace_level_ = level;
  trace_tokens_ = max_tokens;
  trace_ = std::make_unique<NeuronTrace>(c_.n_layer, c_.n_ff);
}

void ActivationCalibrator::OnPreActivations(int64_t il, const FfnInput& in, const float* gate,
                                            const float* up) {
  const int64_t n_ff = c_.n_ff, n = in.n;
  if (act_.size() < static_cast<size_t>(n_ff)) act_.resize(n_ff);
  const auto n_levels = static_cast<int64_t>(levels_.size());
  for (int64_t t = 0; t < n; ++t) {
    std::copy_n(gate + t * n_ff, n_ff, act_.data());
    GateActivation(c_.ffn_kind, act_.data(), n_ff);
    if (!counting_) {
      if (il == 0) ++tokens_;
      for (int64_t i = 0; i < n_ff; ++i) {
        cats_[il].Add(std::fabs(act_[i]));
        teal_[il].Add(std::fabs(act_[i] * up[t * n_ff + i]));
      }
      continue;
    }
    ++counted_tokens_[il];
    const float* th = &cats_threshold_[0];
    Samples* keep = nullptr;
    if (max_samples_ > 0 && samples_[il].n < max_samples_) {
      keep = &samples_[il];
      keep->x.insert(keep->x.end(), in.normed + t * c_.n_embd, in.normed + (t + 1) * c_.n_embd);
      keep->label.resize(static_cast<size_t>((keep->n + 1) * n_ff));
    }
    const bool tracing = trace_ && trace_->tokens(il) < trace_tokens_;
    trace_ids_.clear();
    for (int64_t i = 0; i < n_ff; ++i) {
      const float a = std::fabs(act_[i]);
      int64_t passed = 0;
      while (passed < n_levels && a >= th[passed * c_.n_layer + il]) ++passed;
      ++passed_[(il * n_ff + i) * (n_levels + 1) + passed];
      if (keep) keep->label[keep->n * n_ff + i] = passed > static_cast<int64_t>(sample_level_);
      if (tracing && passed > static_cast<int64_t>(trace_level_)) {
        trace_ids_.push_back(static_cast<int32_t>(i));
      }
    }
    if (keep) ++keep->n;
    if (tracing) trace_->Append(il, trace_ids_);
  }
}

void ActivationCalibrator::EndFirstPass() {
  const auto n_levels = static_cast<int64_t>(levels_.size());
  cats_threshold_.assign(n_levels * c_.n_layer, 0.0f);
  teal_threshold_.assign(n_levels * c_.n_layer, 0.0f);
  for (int64_t k = 0; k < n_levels; ++k) {
    for (int64_t l = 0; l < c_.n_layer; ++l) {
      cats_threshold_[k * c_.n_layer + l] = cats_[l].Quantile(levels_[k]);
      teal_threshold_[k * c_.n_layer + l] = teal_[l].Quantile(levels_[k]);
    }
  }
  passed_.assign(c_.n_layer * c_.n_ff * (n_levels + 1), 0);
  counting_ = true;
}

ActivationProfile ActivationCalibrator::Result() const {
  const auto n_levels = static_cast<int64_t>(levels_.size());
  ActivationProfile p;
  p.model_name = c_.name;
  p.n_layer = c_.n_layer;
  p.n_ff = c_.n_ff;
  p.tokens = tokens_;
  p.levels = levels_;
  p.cats_threshold = cats_threshold_;
  p.teal_threshold = teal_threshold_;
  p.hot80.assign(n_levels * c_.n_layer, 0.0f);
  p.frequency.assign(n_levels * c_.n_layer * c_.n_ff, 0.0f);
  std::vector<int64_t> active(c_.n_ff);
  for (int64_t k = 0; k < n_levels; ++k) {
    for (int64_t l = 0; l < c_.n_layer; ++l) {
      const double seen = std::max<int64_t>(counted_tokens_[l], 1);
      int64_t total = 0;
      for (int64_t i = 0; i < c_.n_ff; ++i) {
        // Active under level k's threshold: passed more than k of the thresholds.
        const int64_t* row = &passed_[(l * c_.n_ff + i) * (n_levels + 1)];
        active[i] = 0;
        for (int64_t b = k + 1; b <= n_levels; ++b) active[i] += row[b];
        total += active[i];
        p.frequency[(k * c_.n_layer + l) * c_.n_ff + i] = static_cast<float>(active[i] / seen);
      }
      std::sort(active.begin(), active.end(), std::greater<>());
      int64_t covered = 0, hot = 0;
      while (hot < c_.n_ff && covered * 5 < total * 4) covered += active[hot++];
      p.hot80[k * c_.n_layer + l] = static_cast<float>(hot) / static_cast<float>(c_.n_ff);
    }
  }
  return p;
}

}  // namespace sparrow
