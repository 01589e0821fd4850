#include "engine/sparse/activation_profile.h"

#include <cmath>
#include <cstring>
#include <memory>

#include "engine/model/gguf_file.h"

namespace sparrow {
namespace {

namespace pf = profile_format;

// An F32 tensor of exactly `dims`, copied out; every value finite, and >= 0 unless `signed_ok`
// (thresholds and frequencies cannot be negative, predictor weights can).
Result<std::vector<float>> ReadF32(const GgufFile& f, const std::string& name,
                                   const std::vector<uint64_t>& dims, bool signed_ok = false) {
  const GgufTensorInfo* t = f.FindTensor(name);
  if (!t) return Corrupt("tensor '" + name + "' is missing");
  if (t->type != TensorType::kF32 || t->dims != dims) {
    std::string want;
    for (uint64_t d : dims) want += (want.empty() ? "" : " x ") + std::to_string(d);
    return Corrupt("tensor '" + name + "' must be f32 of shape " + want);
  }
  std::vector<float> v(t->n_elements);
  std::memcpy(v.data(), t->data, t->n_bytes);
  for (float x : v) {
    if (!std::isfinite(x) || (!signed_ok && x < 0)) {
      return Corrupt("tensor '" + name + "' holds " + std::to_string(x) +
                     ", expected finite values" + (signed_ok ? "" : " >= 0"));
    }
  }
  return v;
}

Status Validate(const ActivationProfile& p) {
  for (size_t i = 0; i < p.levels.size(); ++i) {
    if (!(p.levels[i] > 0 && p.levels[i] < 1) || (i > 0 && p.levels[i] <= p.levels[i - 1])) {
      return Corrupt("levels must ascend strictly within (0, 1); level " + std::to_string(i) +
                     " is " + std::to_string(p.levels[i]));
    }
  }
  const auto n_levels = static_cast<int64_t>(p.levels.size());
  for (int64_t l = 0; l < p.n_layer; ++l) {
    for (int64_t k = 1; k < n_levels; ++k) {
      if (p.cats_threshold[k * p.n_layer + l] < p.cats_threshold[(k - 1) * p.n_layer + l] ||
          p.teal_threshold[k * p.n_layer + l] < p.teal_threshold[(k - 1) * p.n_layer + l]) {
        return Corrupt("thresholds of layer " + std::to_string(l) +
                       " decrease as the sparsity level rises");
      }
    }
  }
  for (float x : p.frequency) {
    if (x > 1) return Corrupt("cats.frequency holds " + std::to_string(x) + ", above 1");
  }
  for (float x : p.hot80) {
    if (x > 1) return Corrupt("cats.hot80 holds " + std::to_string(x) + ", above 1");
  }
  return Status::Ok();
}

Status ReadPredictors(const GgufFile& f, ActivationProfile* p) {
  SPARROW_ASSIGN_OR_RETURN(double level, f.GetFloatOr(pf::kPredictorLevelKey, 0));
  if (!(level > 0 && level < 1)) {
    return Corrupt(std::string(pf::kPredictorLevelKey) + " is " + std::to_string(level));
  }
  p->predictor_level = static_cast<float>(level);
  SPARROW_ASSIGN_OR_RETURN(
      std::vector<float> quality,
      ReadF32(f, pf::kPredictorQuality, {3, static_cast<uint64_t>(p->n_layer)}));
  for (int64_t l = 0; l < p->n_layer; ++l) {
    const std::string n = "pred." + std::to_string(l) + ".";
    const GgufTensorInfo* fc1 = f.FindTensor(n + "fc1");
    if (!fc1 || fc1->dims.size() != 2 || fc1->dims[1] == 0 || fc1->dims[1] > 65536) {
      return Corrupt("tensor '" + n + "fc1' must be n_embd x rank");
    }
    if (l == 0) p->n_embd = static_cast<int64_t>(fc1->dims[0]);
    ActivationProfile::LayerPredictor lp;
    lp.rank = static_cast<int64_t>(fc1->dims[1]);
    const auto e = static_cast<uint64_t>(p->n_embd), r = static_cast<uint64_t>(lp.rank),
               ff = static_cast<uint64_t>(p->n_ff);
    SPARROW_ASSIGN_OR_RETURN(lp.fc1, ReadF32(f, n + "fc1", {e, r}, /*signed_ok=*/true));
    SPARROW_ASSIGN_OR_RETURN(lp.fc2, ReadF32(f, n + "fc2", {r, ff}, /*signed_ok=*/true));
    SPARROW_ASSIGN_OR_RETURN(lp.bias, ReadF32(f, n + "bias", {ff}, /*signed_ok=*/true));
    lp.recall = quality[l];
    lp.precision = quality[p->n_layer + l];
    lp.predicted = quality[2 * p->n_layer + l];
    p->predictors.push_back(std::move(lp));
  }
  return Status::Ok();
}

Status ReadMissCurve(const GgufFile& f, ActivationProfile* p) {
  SPARROW_ASSIGN_OR_RETURN(double level, f.GetFloatOr(pf::kMissLevelKey, 0));
  if (!(level > 0 && level < 1)) {
    return Corrupt(std::string(pf::kMissLevelKey) + " is " + std::to_string(level));
  }
  p->miss_level = static_cast<float>(level);
  const GgufTensorInfo* t = f.FindTensor(pf::kMissFraction);
  if (!t || t->dims.size() != 1 || t->dims[0] == 0 || t->dims[0] > 1000) {
    return Corrupt(std::string("tensor '") + pf::kMissFraction + "' must list 1..1000 sizes");
  }
  SPARROW_ASSIGN_OR_RETURN(p->miss_fraction, ReadF32(f, pf::kMissFraction, {t->dims[0]}));
  SPARROW_ASSIGN_OR_RETURN(p->miss_rate, ReadF32(f, pf::kMissRate, {t->dims[0]}));
  for (auto [name, v] : {std::pair{pf::kMissRateWindow, &p->miss_rate_window},
                         std::pair{pf::kMissRateHotHalf, &p->miss_rate_hot_half},
                         std::pair{pf::kMissRateLfu, &p->miss_rate_lfu},
                         std::pair{pf::kMissRateGlobalHot, &p->miss_rate_global_hot},
                         std::pair{pf::kMissRateOptimum, &p->miss_rate_optimum}}) {
    if (!f.FindTensor(name)) continue;
    SPARROW_ASSIGN_OR_RETURN(*v, ReadF32(f, name, {t->dims[0]}));
    for (float r : *v) {
      if (!(r >= 0 && r <= 1)) {
        return Corrupt(std::string(name) + " holds " + std::to_string(r) + ", outside [0, 1]");
      }
    }
  }
  for (size_t i = 0; i < p->miss_fraction.size(); ++i) {
    const float x = p->miss_fraction[i];
    if (!(x > 0 && x <= 1) || (i > 0 && x <= p->miss_fraction[i - 1])) {
      return Corrupt(std::string(pf::kMissFraction) + " must ascend within (0, 1]; entry " +
                     std::to_string(i) + " is " + std::to_string(x));
    }
    if (p->miss_rate[i] > 1) {
      return Corrupt(std::string(pf::kMissRate) + " holds " + std::to_string(p->miss_rate[i]) +
                     ", above 1");
    }
  }
  return Status::Ok();
}

Result<ActivationProfile> Read(const GgufFile& f, const ModelConfig* model) {
  ActivationProfile p;
  SPARROW_ASSIGN_OR_RETURN(uint64_t version, f.GetUInt(pf::kVersionKey));
  if (version != pf::kVersion) {
    return Unsupported(std::string(pf::kVersionKey) + " is " + std::to_string(version) +
                       " (this build reads " + std::to_string(pf::kVersion) + ")");
  }
  if (auto name = f.GetString(pf::kModelKey); name.ok()) p.model_name = std::string(*name);
  SPARROW_ASSIGN_OR_RETURN(uint64_t tokens, f.GetUInt(pf::kTokensKey));
  p.tokens = static_cast<int64_t>(tokens);

  const GgufTensorInfo* levels = f.FindTensor(pf::kLevels);
  const GgufTensorInfo* freq = f.FindTensor(pf::kFrequency);
  if (!levels || levels->dims.size() != 1 || levels->dims[0] == 0 || levels->dims[0] > 1000) {
    return Corrupt(std::string("tensor '") + pf::kLevels + "' must list 1..1000 levels");
  }
  if (!freq || freq->dims.size() != 3 || freq->dims[0] == 0 || freq->dims[1] == 0) {
    return Corrupt(std::string("tensor '") + pf::kFrequency + "' must be n_ff x n_layer x levels");
  }
  const uint64_t n_levels = levels->dims[0];
  p.n_ff = static_cast<int64_t>(freq->dims[0]);
  p.n_layer = static_cast<int64_t>(freq->dims[1]);
  const std::vector<uint64_t> per_layer = {freq->dims[1], n_levels};
  SPARROW_ASSIGN_OR_RETURN(p.levels, ReadF32(f, pf::kLevels, {n_levels}));
  SPARROW_ASSIGN_OR_RETURN(p.cats_threshold, ReadF32(f, pf::kCatsThreshold, per_layer));
  SPARROW_ASSIGN_OR_RETURN(p.teal_threshold, ReadF32(f, pf::kTealThreshold, per_layer));
  SPARROW_ASSIGN_OR_RETURN(p.hot80, ReadF32(f, pf::kHot80, per_layer));
  SPARROW_ASSIGN_OR_RETURN(p.frequency,
                           ReadF32(f, pf::kFrequency, {freq->dims[0], freq->dims[1], n_levels}));
  SPARROW_RETURN_IF_ERROR(Validate(p));
  if (f.Find(pf::kPredictorLevelKey)) SPARROW_RETURN_IF_ERROR(ReadPredictors(f, &p));
  if (f.Find(pf::kMissLevelKey)) SPARROW_RETURN_IF_ERROR(ReadMissCurve(f, &p));
  if (model && (model->n_layer != p.n_layer || model->n_ff != p.n_ff ||
                (!p.predictors.empty() && model->n_embd != p.n_embd))) {
    return InvalidArgument("profile is of a model with " + std::to_string(p.n_layer) +
                           " layers of " + std::to_string(p.n_ff) + " FFN neurons, this one has " +
                           std::to_string(model->n_layer) + " of " + std::to_string(model->n_ff));
  }
  return p;
}

}  // namespace

Result<std::vector<float>> ActivationProfile::Thresholds(ThresholdMethod method,
                                                         double sparsity) const {
  // A level's own thresholds, as they are (0.05 is not below the level 0.05f).
  const std::vector<float>& t = method == ThresholdMethod::kCats ? cats_threshold : teal_threshold;
  for (size_t k = 0; k < levels.size(); ++k) {
    if (std::fabs(levels[k] - sparsity) <= kSameSparsity) {
      return std::vector<float>(t.begin() + static_cast<int64_t>(k) * n_layer,
                                t.begin() + static_cast<int64_t>(k + 1) * n_layer);
    }
  }
  if (levels.empty() || !(sparsity >= levels.front() && sparsity <= levels.back())) {
    return InvalidArgument("sparsity " + std::to_string(sparsity) + " is outside the profile's " +
                           std::to_string(levels.empty() ? 0 : levels.front()) + ".." +
                           std::to_string(levels.empty() ? 0 : levels.back()));
  }
  size_t hi = 0;
  while (levels[hi] < sparsity) ++hi;
  const size_t lo = hi == 0 ? 0 : hi - 1;
  const double w = hi == lo ? 0 : (sparsity - levels[lo]) / (levels[hi] - levels[lo]);
  std::vector<float> out(n_layer);
  for (int64_t l = 0; l < n_layer; ++l) {
    out[l] = static_cast<float>((1 - w) * t[lo * n_layer + l] + w * t[hi * n_layer + l]);
  }
  return out;
}

Result<ActivationProfile> ReadActivationProfile(const std::string& path, const ModelConfig* model) {
  SPARROW_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> f, GgufFile::Open(path));
  auto p = Read(*f, model);
  if (!p.ok()) return p.status().WithContext(path);
  return p;
}

}  // namespace sparrow
