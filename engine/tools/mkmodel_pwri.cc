#include "engine/tools/mkmodel_pwri.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>

#include "engine/tools/mkmodel_random.h"

namespace sparrow::tools {
namespace {

// Each half of fc2 leaves its first block (where w_i lives) without offset: a quantized block
// holding both w_i's +-0.5 and a tiny offset would round the offset away in some types only.
constexpr int64_t kPickRows = 32;
constexpr float kMaxFrequency = 0.999f, kMinFrequency = 1e-4f;

double NormalCdf(double z) {
  return 0.5 * std::erfc(-z / std::sqrt(2.0));
}

double NormalQuantile(double p) {
  double lo = -8.0, hi = 8.0;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (NormalCdf(mid) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

std::vector<float> Frequencies(const PwriLayout& l, uint64_t seed) {
  const auto n = static_cast<size_t>(l.n_ff);
  std::vector<float> f(n, static_cast<float>(l.active));
  if (l.hot.power <= 0.0) return f;
  // A random ranking: hot neurons are spread over the matrix as in a trained model.
  std::vector<int64_t> rank(n);
  std::iota(rank.begin(), rank.end(), 0);
  uint64_t state = seed;
  for (size_t i = n - 1; i > 0; --i) std::swap(rank[i], rank[SplitMix(state) % (i + 1)]);
  auto mean_at = [&](double scale) {
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i) {
      sum += std::min<double>(kMaxFrequency,
                              scale * std::pow(static_cast<double>(rank[i] + 1), -l.hot.power));
    }
    return sum / static_cast<double>(n);
  };
  double lo = 0.0, hi = 1.0;
  while (mean_at(hi) < l.active && hi < 1e12) hi *= 2.0;
  for (int i = 0; i < 80; ++i) {
    const double mid = 0.5 * (lo + hi);
    (mean_at(mid) < l.active ? lo : hi) = mid;
  }
  for (size_t i = 0; i < n; ++i) {
    const double v = hi * std::pow(static_cast<double>(rank[i] + 1), -l.hot.power);
    f[i] = static_cast<float>(std::clamp<double>(v, kMinFrequency, kMaxFrequency));
  }
  return f;
}

}  // namespace

Result<HotProfile> ParseHotProfile(std::string_view text) {
  if (text == "uniform") return HotProfile{};
  constexpr std::string_view kPrefix = "powerlaw:";
  if (text.substr(0, kPrefix.size()) == kPrefix) {
    const std::string value(text.substr(kPrefix.size()));
    char* end = nullptr;
    const double a = std::strtod(value.c_str(), &end);
    if (!value.empty() && end == value.c_str() + value.size() && a > 0.0 && a <= 4.0) {
      return HotProfile{a};
    }
  }
  return InvalidArgument("--hot-profile '" + std::string(text) +
                         "': expected 'uniform' or 'powerlaw:A' with 0 < A <= 4");
}

Status CheckPwriLayout(const PwriLayout& l) {
  if (l.rank < 4 * kPickRows || l.rank % 32 != 0) {
    return InvalidArgument("--predictor-rank " + std::to_string(l.rank) +
                           ": must be a multiple of 32 and at least 128");
  }
  if (!(l.active > 0.0 && l.active < 1.0)) {
    return InvalidArgument("--active " + std::to_string(l.active) +
                           ": the share of active neurons must lie strictly between 0 and 1");
  }
  return Status::Ok();
}

PwriLayer::PwriLayer(const PwriLayout& layout, uint64_t seed) : layout_(layout), seed_(seed) {
  const int64_t m = layout.rank / 2;
  p_.resize(static_cast<size_t>(m * layout.n_embd));
  // Rows of P with variance 1/n_embd, like any input projection of the synthetic models.
  const float half_width = std::sqrt(3.0f / static_cast<float>(layout.n_embd));
  for (int64_t j = 0; j < m; ++j) {
    uint64_t state = RowStream(seed ^ 0x5045ull, j);
    for (int64_t c = 0; c < layout.n_embd; ++c) {
      p_[j * layout.n_embd + c] = UniformFloat(state, 0.0f, half_width);
    }
  }
  freq_ = Frequencies(layout, seed ^ 0x46ull);
  // P(w_i.Px + c_i S >= 0) = f_i, with w_i.Px ~ N(0, sigma^2) (|w_i| = 1) and S, the sum of
  // |P_j x| over the m - 32 rows with an offset, near (m - 32) sigma sqrt(2/pi).
  const double s = static_cast<double>(m - kPickRows) * std::sqrt(2.0 / M_PI);
  offset_.resize(freq_.size());
  for (size_t i = 0; i < freq_.size(); ++i) {
    offset_[i] = static_cast<float>(NormalQuantile(freq_[i]) / s);
  }
}

void PwriLayer::Picks(int64_t neuron, int idx[kPicks], float w[kPicks]) const {
  uint64_t state = RowStream(seed_ ^ 0x55ull, neuron);
  for (int k = 0; k < kPicks; ++k) {
    const uint64_t r = SplitMix(state);
    idx[k] = static_cast<int>(r % kPickRows);
    w[k] = (r >> 32) & 1 ? 0.5f : -0.5f;
  }
}

void PwriLayer::GateRow(int64_t neuron, float* out) const {
  int idx[kPicks];
  float w[kPicks];
  Picks(neuron, idx, w);
  const int64_t d = layout_.n_embd;
  // 15% full-rank noise, as in ../shared/pwri's files: the predictor is right, not perfect.
  uint64_t state = RowStream(seed_ ^ 0x4eull, neuron);
  const float noise = 0.15f * std::sqrt(3.0f / static_cast<float>(d));
  for (int64_t c = 0; c < d; ++c) out[c] = UniformFloat(state, 0.0f, noise);
  for (int k = 0; k < kPicks; ++k) {
    const float* p = p_.data() + idx[k] * d;
    for (int64_t c = 0; c < d; ++c) out[c] += w[k] * p[c];
  }
}

void PwriLayer::Fc1Row(int64_t j, float* out) const {
  const int64_t m = layout_.rank / 2, d = layout_.n_embd;
  const float sign = j < m ? 1.0f : -1.0f;
  const float* p = p_.data() + (j % m) * d;
  for (int64_t c = 0; c < d; ++c) out[c] = sign * p[c];
}

void PwriLayer::Fc2Row(int64_t neuron, float* out) const {
  const int64_t m = layout_.rank / 2;
  const float c_i = offset_[static_cast<size_t>(neuron)];
  for (int64_t j = 0; j < layout_.rank; ++j) out[j] = j % m < kPickRows ? 0.0f : c_i;
  int idx[kPicks];
  float w[kPicks];
  Picks(neuron, idx, w);
  for (int k = 0; k < kPicks; ++k) {
    out[idx[k]] += w[k];
    out[m + idx[k]] -= w[k];
  }
}

double HotSetShare(const std::vector<float>& freq, double share) {
  std::vector<float> f = freq;
  std::sort(f.begin(), f.end(), std::greater<>());
  const double total = std::accumulate(f.begin(), f.end(), 0.0);
  double sum = 0.0;
  for (size_t i = 0; i < f.size(); ++i) {
    sum += f[i];
    if (sum >= share * total) return static_cast<double>(i + 1) / static_cast<double>(f.size());
  }
  return 1.0;
}

}  // namespace sparrow::tools
