#pragma once
// `sparrow profile`: runs a calibration text through a model and writes its activation profile
// (engine/sparse/README.md), which --sparsity resolves to per-layer thresholds; `--show` prints
// one for a person.
#include <cstdint>
#include <string>

#include "engine/common/result.h"
#include "engine/sparse/activation_profile.h"

namespace CLI {
class App;
}

namespace sparrow::tools {

struct ProfileOptions {
  std::string model;
  std::string text_file;
  std::string output;
  std::string show;            // a profile to print instead
  int64_t n_ctx = 256;         // tokens per calibration window
  int64_t max_tokens = 50000;  // calibration tokens used at most (0: the whole text)
  int threads = 0;
  bool train_predictor = false;
  int64_t predictor_rank = 64;
  double predictor_sparsity = 0.5;
  int64_t predictor_samples = 20000;
  int predictor_epochs = 4;
  double predictor_recall = 0.9;
  int64_t miss_tokens = 256;  // calibration tokens whose neurons the miss curve replays
  bool verbose = false;       // per-layer predictor quality on stderr even off a terminal
};

void RegisterProfileCommand(CLI::App& app, ProfileOptions& opts, int& exit_code);
int RunProfile(const ProfileOptions& opts);

// The calibration itself (the command minus its printing), for tests.
Result<ActivationProfile> CalibrateProfile(const ProfileOptions& opts);
Status WriteActivationProfile(const ActivationProfile& p, const std::string& path);
// The human-readable summary `--show` prints.
std::string DescribeProfile(const ActivationProfile& p);

}  // namespace sparrow::tools
