// Image embeddings against llama.cpp's llama-mtmd-cli (MTMD_DEBUG_EMBEDDINGS: clip.cpp's print
// of token 0's first and last 16 values and statistics over all of them), as
// tests/golden/vision/*.json keep them (made as its README says): the synthetic projector of
// each file written again here (the same bytes: synthetic_projector.h), each committed PNG
// decoded and encoded as sparrowd would, every printed value within 1e-4 relative (plus the
// print's precision, or the file's own bound).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/vision/image_decode.h"
#include "engine/vision/siglip_encoder.h"
#include "tests/util/synthetic_projector.h"
#include "tests/util/test_paths.h"

namespace sparrow::vision {
namespace {

// The bound, relative, plus an absolute part: by default half the last printed decimal
// (the values are printed with 6), so that a value near 0 is not held to digits the print does
// not have; a file may carry its own ("tolerance": {"absolute": ...}; README.md there says why
// the F16 one does).
constexpr double kRelative = 1e-4;
constexpr double kPrinted = 5e-7;

bool Near(double ours, double ref, double absolute) {
  return std::abs(ours - ref) <= kRelative * std::abs(ref) + absolute;
}

// clip.cpp's statistics, with its float arithmetic.
struct Stats {
  float mean, std, min, max, sum;
};
Stats Statistics(const std::vector<float>& v) {
  float sum = 0.0f, sum_sq = 0.0f, lo = v[0], hi = v[0];
  for (float x : v) {
    sum += x;
    sum_sq += x * x;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  const float n = static_cast<float>(v.size());
  const float mean = sum / n;
  return {mean, std::sqrt(sum_sq / n - mean * mean), lo, hi, sum};
}

class VisionGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(VisionGoldenTest, MatchesLlamaCpp) {
  const std::string dir = SPARROW_VISION_GOLDEN_DIR;
  const auto g = nlohmann::json::parse(testing::ReadFileOrDie(dir + "/" + GetParam()));
  testing::ProjectorSpec spec;
  spec.seed = g.at("projector").at("seed").get<uint64_t>();
  spec.matrix_type = g.at("projector").at("type").get<std::string>() == "f16" ? TensorType::kF16
                                                                              : TensorType::kF32;
  const double absolute =
      g.contains("tolerance") ? g["tolerance"].at("absolute").get<double>() : kPrinted;
  const std::vector<uint8_t> bytes = testing::MakeGemma3Projector(spec).Bytes();
  auto f = GgufFile::FromMemory(bytes, "synth-gemma3-mmproj.gguf");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto model = ClipModel::FromGguf(std::move(*f));
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  for (const auto& c : g.at("cases")) {
    const std::string name = c.at("image").get<std::string>();
    SCOPED_TRACE(name);
    const std::string png = testing::ReadFileOrDie(dir + "/" + name);
    auto image = DecodeImage({reinterpret_cast<const uint8_t*>(png.data()), png.size()});
    ASSERT_TRUE(image.ok()) << image.status().ToString();
    auto emb = EncodeImage(**model, *image, nullptr);
    ASSERT_TRUE(emb.ok()) << emb.status().ToString();
    ASSERT_EQ(emb->n_embd, c.at("n_embd").get<int64_t>());
    ASSERT_EQ(emb->n_tokens, c.at("n_tokens").get<int64_t>());
    const auto first = c.at("token0_first").get<std::vector<double>>();
    const auto last = c.at("token0_last").get<std::vector<double>>();
    for (size_t i = 0; i < first.size(); ++i) {
      EXPECT_TRUE(Near(emb->data[i], first[i], absolute))
          << "token 0 value " << i << ": " << emb->data[i] << " vs " << first[i];
    }
    const size_t n = static_cast<size_t>(emb->n_embd);
    for (size_t i = 0; i < last.size(); ++i) {
      const size_t at = n - last.size() + i;
      EXPECT_TRUE(Near(emb->data[at], last[i], absolute))
          << "token 0 value " << at << ": " << emb->data[at] << " vs " << last[i];
    }
    const Stats s = Statistics(emb->data);
    const auto& ref = c.at("stats");
    EXPECT_TRUE(Near(s.mean, ref.at("mean").get<double>(), absolute))
        << s.mean << " vs " << ref.at("mean");
    EXPECT_TRUE(Near(s.std, ref.at("std").get<double>(), absolute))
        << s.std << " vs " << ref.at("std");
    EXPECT_TRUE(Near(s.min, ref.at("min").get<double>(), absolute))
        << s.min << " vs " << ref.at("min");
    EXPECT_TRUE(Near(s.max, ref.at("max").get<double>(), absolute))
        << s.max << " vs " << ref.at("max");
    // The sum's errors are those of its values, adding up as the square root of their count.
    const double sum_absolute = absolute * std::sqrt(static_cast<double>(emb->data.size()));
    EXPECT_TRUE(Near(s.sum, ref.at("sum").get<double>(), sum_absolute))
        << s.sum << " vs " << ref.at("sum");
  }
}

INSTANTIATE_TEST_SUITE_P(Files, VisionGoldenTest,
                         ::testing::Values("gemma3-f32.json", "gemma3-f16.json"),
                         [](const auto& info) {
                           std::string n = info.param.substr(0, info.param.find('.'));
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace sparrow::vision
