#include "engine/runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace sparrow {

Status SamplingParams::Validate() const {
  auto bad = [](const std::string& name, double v, const std::string& want) {
    return InvalidArgument(name + " is " + std::to_string(v) + "; " + want);
  };
  if (!std::isfinite(temperature) || temperature < 0 || temperature > 100) {
    return bad("temperature", temperature, "expected 0..100 (0 = greedy)");
  }
  if (!std::isfinite(top_p) || top_p <= 0 || top_p > 1)
    return bad("top_p", top_p, "expected a value in (0, 1]");
  if (!std::isfinite(min_p) || min_p < 0 || min_p > 1)
    return bad("min_p", min_p, "expected a value in [0, 1]");
  if (!std::isfinite(repeat_penalty) || repeat_penalty <= 0) {
    return bad("repeat_penalty", repeat_penalty, "expected a positive value (1 = off)");
  }
  if (!std::isfinite(presence_penalty) || std::fabs(presence_penalty) > 2) {
    return bad("presence_penalty", presence_penalty, "expected -2..2");
  }
  if (!std::isfinite(frequency_penalty) || std::fabs(frequency_penalty) > 2) {
    return bad("frequency_penalty", frequency_penalty, "expected -2..2");
  }
  if (penalty_last_n < 0) return bad("penalty_last_n", penalty_last_n, "expected >= 0");
  return Status::Ok();
}

int32_t ArgMax(std::span<const float> logits) {
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

Sampler::Sampler(const SamplingParams& params) : params_(params) {
  uint64_t seed = params.seed;
  if (seed == SamplingParams::kRandomSeed) seed = std::random_device{}();
  rng_.seed(seed);
}

void Sampler::Accept(int32_t token) {
  if (params_.penalty_last_n <= 0) return;
  recent_.push_back(token);
  while (recent_.size() > static_cast<size_t>(params_.penalty_last_n)) recent_.pop_front();
}

void Sampler::ApplyPenalties(std::vector<Candidate>& c) const {
  const bool any = params_.repeat_penalty != 1.0f || params_.presence_penalty != 0.0f ||
                   params_.frequency_penalty != 0.0f;
  if (!any || recent_.empty()) return;
  std::unordered_map<int32_t, int> counts;
  for (int32_t t : recent_) ++counts[t];
  for (const auto& [id, count] : counts) {
    if (id < 0 || static_cast<size_t>(id) >= c.size()) continue;
    float& l = c[id].logit;  // candidates are still in id order here
    // Repetition penalty as in CTRL / llama.cpp: shrink positive logits, grow negative ones.
    l = l > 0 ? l / params_.repeat_penalty : l * params_.repeat_penalty;
    l -= static_cast<float>(count) * params_.frequency_penalty + params_.presence_penalty;
  }
}

int32_t Sampler::Sample(std::span<const float> logits) {
  const size_t n = logits.size();
  cand_.resize(n);
  for (size_t i = 0; i < n; ++i) cand_[i] = {static_cast<int32_t>(i), logits[i]};
  ApplyPenalties(cand_);

  auto by_logit = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  if (params_.temperature <= 0.0f) {
    return std::min_element(cand_.begin(), cand_.end(), by_logit)->id;
  }

  size_t keep = n;
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n) keep = params_.top_k;
  std::partial_sort(cand_.begin(), cand_.begin() + keep, cand_.end(), by_logit);
  cand_.resize(keep);

  // Probabilities at temperature 1 decide top-p and min-p, as llama.cpp does.
  auto softmax = [this](float temp) {
    probs_.resize(cand_.size());
    const float max_l = cand_[0].logit;
    double sum = 0;
    for (size_t i = 0; i < cand_.size(); ++i) {
      probs_[i] = std::exp((cand_[i].logit - max_l) / temp);
      sum += probs_[i];
    }
    for (float& p : probs_) p = static_cast<float>(p / sum);
  };
  softmax(1.0f);
  if (params_.top_p < 1.0f) {
    double cum = 0;
    size_t i = 0;
    for (; i < cand_.size(); ++i) {
      cum += probs_[i];
      if (cum >= params_.top_p) break;
    }
    cand_.resize(std::min(cand_.size(), i + 1));
    probs_.resize(cand_.size());
  }
  if (params_.min_p > 0.0f) {
    const float floor = probs_[0] * params_.min_p;
    size_t i = 1;
    while (i < cand_.size() && probs_[i] >= floor) ++i;
    cand_.resize(i);
  }
  softmax(params_.temperature);
  std::discrete_distribution<size_t> dist(probs_.begin(), probs_.end());
  return cand_[dist(rng_)].id;
}

float TokenLogprob(std::span<const float> logits, int32_t token, int32_t top,
                   std::vector<std::pair<int32_t, float>>* top_out) {
  float mx = logits[0];
  for (float l : logits) mx = std::max(mx, l);
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l - mx));
  const float log_z = mx + static_cast<float>(std::log(sum));
  if (top > 0 && top_out != nullptr) {
    std::vector<int32_t> ids(logits.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
    const size_t k = std::min<size_t>(top, ids.size());
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    for (size_t i = 0; i < k; ++i) top_out->emplace_back(ids[i], logits[ids[i]] - log_z);
  }
  return logits[token] - log_z;
}

}  // namespace sparrow
