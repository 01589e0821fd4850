// sparrow convert's neuron-bundle layout: what the records hold, that a converted model computes
// what the source computes (bit for bit in the file's neuron order, to summation order in another
// order), and that malformed layouts and bad requests are refused with the field named.
#include "engine/tools/bundle_convert.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>

#include "engine/kernels/quantize.h"
#include "engine/model/model.h"
#include "engine/model/neuron_bundles.h"
#include "engine/runtime/forward_pass.h"
#include "engine/runtime/kv_cache.h"
#include "engine/sparse/ffn_factory.h"
#include "engine/tools/predictor_frequency.h"
#include "tests/util/synthetic_llama.h"
#include "tests/util/test_paths.h"

namespace sparrow::tools {
namespace {

using testing::FileExists;
using testing::LlamaModelSpec;
using testing::TempPath;

LlamaModelSpec Spec(TensorType type, uint32_t predictor_rank) {
  LlamaModelSpec s;
  s.weight_type = s.embd_type = s.output_type = type;
  s.n_embd = 64;
  s.n_ff = 256;
  s.predictor_rank = predictor_rank;
  s.weight_scale = 0.1f;
  s.quantize = [](TensorType t, const float* src, void* dst, int64_t n) {
    kernels::QuantizeRow(t, src, dst, n);
  };
  return s;
}

std::string WriteSpec(const LlamaModelSpec& spec, const std::string& name) {
  auto w = testing::MakeLlamaModel(spec);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  const std::string path = TempPath(name + ".gguf");
  EXPECT_TRUE(w->WriteFile(path).ok());
  return path;
}

std::vector<int32_t> Reversed(int64_t, int64_t n_ff) {
  std::vector<int32_t> order(n_ff);
  for (int64_t i = 0; i < n_ff; ++i) order[i] = static_cast<int32_t>(n_ff - 1 - i);
  return order;
}

Result<ConvertSummary> Convert(const std::string& in, const std::string& out,
                               std::function<std::vector<int32_t>(int64_t, int64_t)> order = {}) {
  ConvertOptions o;
  o.model = in;
  o.output = out;
  o.order = std::move(order);
  return ConvertToBundles(o);
}

// Logits of a short prompt and three decoded tokens, each step's row appended.
std::vector<float> Logits(const Model& m) {
  ForwardPass fp(m, nullptr, MakeDefaultFeedForward(m, nullptr));
  ContiguousKvCache cache(m.config().n_layer, 64, m.config().kv_dim());
  const std::vector<int32_t> prompt = {1, 70, 81, 92, 103};
  std::vector<float> all, step;
  EXPECT_TRUE(fp.Run(prompt, 0, cache, false, &step).ok());
  all = step;
  for (int32_t t = 0; t < 3; ++t) {
    const int32_t token = 120 + t;
    EXPECT_TRUE(fp.Run({&token, 1}, 5 + t, cache, false, &step).ok());
    all.insert(all.end(), step.begin(), step.end());
  }
  return all;
}

float MaxRelDiff(const std::vector<float>& a, const std::vector<float>& b) {
  float max_ref = 0, max_d = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    max_ref = std::max(max_ref, std::fabs(b[i]));
    max_d = std::max(max_d, std::fabs(a[i] - b[i]));
  }
  return max_d / std::max(max_ref, 1e-6f);
}

TEST(BundleRecordBytes, TilesBlocksOrTakesWholeOnes) {
  EXPECT_EQ(BundleRecordBytes(768, 4096), 1024u);  // four records per block
  EXPECT_EQ(BundleRecordBytes(1024, 4096), 1024u);
  EXPECT_EQ(BundleRecordBytes(2049, 4096), 4096u);  // the next power of two is the block
  EXPECT_EQ(BundleRecordBytes(6912, 4096), 8192u);  // a 7B Q4_0 neuron: two blocks
  EXPECT_EQ(BundleRecordBytes(8192, 4096), 8192u);
  EXPECT_EQ(BundleRecordBytes(6912, 512), 7168u);
  EXPECT_EQ(BundleRecordBytes(0, 4096), 0u);
}

TEST(ConvertToBundles, PowerInferFileKeepsItsBitsAndBundlesTheGate) {
  for (TensorType type : {TensorType::kF32, TensorType::kF16, TensorType::kQ4_0}) {
    SCOPED_TRACE(std::string(TensorTypeName(type)));
    const std::string src = WriteSpec(Spec(type, 32), "pwri-src");
    const std::string dst = TempPath("pwri-bundles.gguf");
    auto sum = Convert(src, dst);
    ASSERT_TRUE(sum.ok()) << sum.status().ToString();
    EXPECT_TRUE(sum->gate_in_bundle);
    EXPECT_FALSE(sum->ordered_by_profile);
    EXPECT_EQ(sum->n_ff, 256);
    EXPECT_FALSE(FileExists(dst + ".partial"));

    auto a = Model::Load(src);
    auto b = Model::Load(dst);
    ASSERT_TRUE(a.ok() && b.ok()) << b.status().ToString();
    EXPECT_TRUE((*b)->config().powerinfer);
    EXPECT_FALSE((*b)->file().powerinfer());  // magic GGUF: standard readers list it
    EXPECT_EQ((*b)->file().alignment(), 4096u);
    ASSERT_NE((*b)->weights().bundles, nullptr);
    const LayerBundles& lb = (*b)->weights().bundles->layers[1];
    const uint64_t row =
        GetTensorTypeTraits(type)->block_bytes * 64 / GetTensorTypeTraits(type)->block_elems;
    EXPECT_EQ(lb.record_bytes, BundleRecordBytes(3 * row, 4096));
    EXPECT_EQ(sum->record_bytes, lb.record_bytes);
    EXPECT_EQ(lb.file_offset % 4096, 0u);
    // Record 5: neuron 5's gate, up and down rows, byte for byte.
    const LayerWeights& la = (*a)->weights().layers[1];
    const uint8_t* rec = lb.records + 5 * lb.record_bytes;
    auto row_of = [&](const kernels::WeightMatrix& w, int r) {
      return static_cast<const uint8_t*>(w.data) + r * w.row_stride_bytes;
    };
    EXPECT_EQ(std::memcmp(rec, row_of(la.ffn_gate, 5), row), 0);
    EXPECT_EQ(std::memcmp(rec + row, row_of(la.ffn_up, 5), row), 0);
    EXPECT_EQ(std::memcmp(rec + 2 * row, row_of(la.ffn_down_t, 5), row), 0);

    const auto want = Logits(**a), got = Logits(**b);
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << i;
    }
  }
}

TEST(ConvertToBundles, ReorderedNeuronsComputeTheSameModel) {
  const std::string src = WriteSpec(Spec(TensorType::kF32, 32), "pwri-order-src");
  const std::string dst = TempPath("pwri-order.gguf");
  ASSERT_TRUE(Convert(src, dst, Reversed).ok());
  auto a = Model::Load(src);
  auto b = Model::Load(dst);
  ASSERT_TRUE(a.ok() && b.ok()) << b.status().ToString();
  const LayerBundles& lb = (*b)->weights().bundles->layers[0];
  EXPECT_EQ(lb.neuron_ids.front(), 255);
  EXPECT_EQ(lb.neuron_ids.back(), 0);
  // The predictor's rows follow the records: fc2 row 0 is the source's row 255.
  const auto& fa = (*a)->weights().layers[0].pred_fc2;
  const auto& fb = (*b)->weights().layers[0].pred_fc2;
  EXPECT_EQ(std::memcmp(fb.data, static_cast<const uint8_t*>(fa.data) + 255 * fa.row_stride_bytes,
                        fa.row_stride_bytes),
            0);
  EXPECT_LT(MaxRelDiff(Logits(**b), Logits(**a)), 1e-5f);
}

// --calibrate on the trained KJV ReLU model (PowerInfer's format, a real predictor): records
// ordered by how often the predictor picks each neuron, the first record picked more often than
// the last, and the model computing the same; SwiGLU models are sent to --profile.
TEST(ConvertToBundles, CalibrateOrdersAPowerInferFileByItsPredictor) {
  const std::string src = testing::SharedDir() + "/kjv/models/kjv-relu-5m-pwri-f16.gguf";
  const std::string text = testing::SharedDir() + "/kjv/text/kjv-train.txt";
  if (!FileExists(src)) GTEST_SKIP() << src << " is missing";
  ConvertOptions o;
  o.model = src;
  o.output = TempPath("kjv-relu-calibrated.gguf");
  o.calibrate = text;
  o.calibrate_tokens = 256;
  o.threads = 2;
  auto sum = ConvertToBundles(o);
  ASSERT_TRUE(sum.ok()) << sum.status().ToString();
  EXPECT_TRUE(sum->ordered_by_profile);
  auto a = Model::Load(src);
  auto b = Model::Load(o.output);
  ASSERT_TRUE(a.ok() && b.ok());
  // The file's order is not the measured one, and the measured one is what the records follow.
  const std::vector<int32_t>& ids = (*b)->weights().bundles->layers[2].neuron_ids;
  EXPECT_FALSE(std::is_sorted(ids.begin(), ids.end()));
  auto cal = CalibrateByPredictor(src, text, 256, 2);
  ASSERT_TRUE(cal.ok());
  EXPECT_EQ(cal->orders[2], ids);
  // The miss curve the planner reads: the file's, as replayed; a larger cache misses less, and
  // one holding every bundle misses only the neurons no earlier token had used.
  const NeuronBundleLayout& layout = *(*b)->weights().bundles;
  ASSERT_EQ(layout.miss_fraction.size(), 20u);
  ASSERT_EQ(layout.miss_rate.size(), 20u);
  EXPECT_FLOAT_EQ(layout.miss_fraction.back(), 1.0f);
  EXPECT_FLOAT_EQ(layout.miss_rate[9], static_cast<float>(cal->miss_curve[9].miss_rate));
  EXPECT_GT(layout.miss_rate.front(), layout.miss_rate[9]);
  EXPECT_GT(layout.miss_rate[9], layout.miss_rate.back());
  EXPECT_LT(layout.miss_rate.back(), 0.05f);
  // A real predictor's choices repeat: half the bundles miss far less than half the neurons.
  EXPECT_LT(layout.miss_rate[9], 0.4f);
  // Summed in another order, a residual moves by rounding, and a neuron whose predictor logit
  // sits at the threshold can flip: close, not bit for bit; the same greedy token.
  const std::vector<float> la = Logits(**a), lb = Logits(**b);
  EXPECT_LT(MaxRelDiff(lb, la), 2e-2f);
  EXPECT_EQ(std::max_element(la.begin(), la.end()) - la.begin(),
            std::max_element(lb.begin(), lb.end()) - lb.begin());

  o.model = WriteSpec(Spec(TensorType::kF32, 0), "calibrate-swiglu");
  o.output = TempPath("calibrate-swiglu.bundles.gguf");
  EXPECT_NE(ConvertToBundles(o).status().message().find("--profile"), std::string::npos);
}

TEST(ConvertToBundles, SwiGluModelKeepsTheGateResidentAndRunsDense) {
  for (TensorType type : {TensorType::kF32, TensorType::kQ8_0, TensorType::kQ4_K}) {
    SCOPED_TRACE(std::string(TensorTypeName(type)));
    auto spec = Spec(type, 0);
    spec.n_embd = 256;  // K-quant blocks
    const std::string src = WriteSpec(spec, "swiglu-src");
    const std::string dst = TempPath("swiglu-bundles.gguf");
    auto sum = Convert(src, dst, Reversed);
    ASSERT_TRUE(sum.ok()) << sum.status().ToString();
    EXPECT_FALSE(sum->gate_in_bundle);
    auto a = Model::Load(src);
    auto b = Model::Load(dst);
    ASSERT_TRUE(a.ok() && b.ok()) << b.status().ToString();
    EXPECT_FALSE((*b)->config().powerinfer);
    EXPECT_EQ((*b)->weights().layers[0].ffn_down.data, nullptr);
    // K-quant down rows become Q8_0 (no row-accumulation kernel for K-quants).
    EXPECT_EQ((*b)->weights().bundles->layers[0].down_type,
              type == TensorType::kQ4_K ? TensorType::kQ8_0 : type);
    EXPECT_EQ(ForwardPass(**b, nullptr, MakeDefaultFeedForward(**b, nullptr)).ffn().mode(),
              "dense");
    EXPECT_LT(MaxRelDiff(Logits(**b), Logits(**a)), type == TensorType::kF32 ? 1e-5f : 2e-2f);
  }
}

TEST(ConvertToBundles, RefusesBadRequestsAndLeavesNoFile) {
  const std::string src = WriteSpec(Spec(TensorType::kF32, 32), "refuse-src");
  const std::string dst = TempPath("refused.gguf");
  std::remove(dst.c_str());
  ConvertOptions o;
  o.model = src;
  o.output = dst;
  o.io_block = 3000;
  EXPECT_NE(ConvertToBundles(o).status().message().find("--io-block"), std::string::npos);
  o.io_block = 4096;
  o.order = [](int64_t, int64_t n_ff) { return std::vector<int32_t>(n_ff, 0); };
  EXPECT_NE(ConvertToBundles(o).status().message().find("not a permutation"), std::string::npos);
  o.order = {};
  o.output = TempPath("no-such-dir/out.gguf");
  EXPECT_FALSE(ConvertToBundles(o).ok());
  EXPECT_FALSE(FileExists(dst));
  EXPECT_FALSE(FileExists(dst + ".partial"));

  ASSERT_TRUE(Convert(src, dst).ok());
  const auto again = Convert(dst, TempPath("twice.gguf"));
  EXPECT_NE(again.status().message().find("already"), std::string::npos);
}

// Rewrites a converted file with one change, for the reader's checks.
std::string Rebuild(const std::string& path, const std::string& name,
                    const std::function<void(testing::GgufWriter&)>& change) {
  auto f = GgufFile::Open(path);
  EXPECT_TRUE(f.ok());
  testing::GgufWriter w;
  for (const auto& [key, value] : (*f)->metadata()) {
    if (key != "general.alignment") {
      EXPECT_TRUE(w.AddCopy(key, value).ok());
    }
  }
  w.SetAlignment(4096);
  for (const GgufTensorInfo& t : (*f)->tensors()) {
    w.AddTensor(t.name, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  }
  change(w);
  const std::string out = TempPath(name + ".gguf");
  EXPECT_TRUE(w.WriteFile(out).ok());
  return out;
}

TEST(ReadNeuronBundleLayout, RefusesMalformedLayoutsNamingTheField) {
  const std::string src = WriteSpec(Spec(TensorType::kF32, 32), "malformed-src");
  const std::string good = TempPath("malformed-good.gguf");
  ASSERT_TRUE(Convert(src, good).ok());
  ASSERT_TRUE(Model::Load(Rebuild(good, "same", [](testing::GgufWriter&) {})).ok());

  struct Case {
    const char* name;
    std::function<void(testing::GgufWriter&)> change;
    const char* expect;
  };
  const std::vector<uint32_t> one_type = {0};
  const std::vector<Case> cases = {
      {"version",
       [](testing::GgufWriter& w) {
         w.RemoveKey("sparrow.layout.version");
         w.AddU32("sparrow.layout.version", 9);
       },
       "sparrow.layout.version"},
      {"block",
       [](testing::GgufWriter& w) {
         w.RemoveKey("sparrow.bundle.io_block");
         w.AddU32("sparrow.bundle.io_block", 3000);
       },
       "sparrow.bundle.io_block"},
      {"types",
       [&](testing::GgufWriter& w) {
         w.RemoveKey("sparrow.bundle.up_types");
         w.AddArray("sparrow.bundle.up_types", one_type);
       },
       "sparrow.bundle.up_types"},
      {"type-id",
       [](testing::GgufWriter& w) {
         w.RemoveKey("sparrow.bundle.down_types");
         w.AddArray("sparrow.bundle.down_types", std::vector<uint32_t>{0, 99});
       },
       "sparrow.bundle.down_types[1]"},
      {"missing", [](testing::GgufWriter& w) { w.RemoveTensor("blk.1.ffn_bundles"); },
       "blk.1.ffn_bundles"},
      {"miss-curve-half",
       [](testing::GgufWriter& w) {
         w.AddArray("sparrow.bundle.miss_fraction", std::vector<float>{0.5f, 1.0f});
       },
       "sparrow.bundle.miss_rate"},
      {"miss-curve-pairs",
       [](testing::GgufWriter& w) {
         w.AddArray("sparrow.bundle.miss_fraction", std::vector<float>{0.5f, 1.0f});
         w.AddArray("sparrow.bundle.miss_rate", std::vector<float>{0.5f});
       },
       "sparrow.bundle.miss_fraction"},
      {"miss-curve-order",
       [](testing::GgufWriter& w) {
         w.AddArray("sparrow.bundle.miss_fraction", std::vector<float>{0.5f, 0.4f});
         w.AddArray("sparrow.bundle.miss_rate", std::vector<float>{0.5f, 0.6f});
       },
       "sparrow.bundle.miss_fraction[1]"},
      {"miss-curve-rate",
       [](testing::GgufWriter& w) {
         w.AddArray("sparrow.bundle.miss_fraction", std::vector<float>{0.5f, 1.0f});
         w.AddArray("sparrow.bundle.miss_rate", std::vector<float>{0.5f, 1.5f});
       },
       "sparrow.bundle.miss_rate[1]"},
      {"short-records",
       [](testing::GgufWriter& w) {
         w.RemoveTensor("blk.0.ffn_bundles");
         w.AddTensor("blk.0.ffn_bundles", TensorType::kI8, {16, 256},
                     std::vector<uint8_t>(16 * 256));
       },
       "blk.0.ffn_bundles"},
      {"ids",
       [](testing::GgufWriter& w) {
         w.RemoveTensor("blk.0.ffn_neuron_ids");
         w.AddTensor("blk.0.ffn_neuron_ids", TensorType::kI32, {256},
                     std::vector<uint8_t>(256 * 4, 0));
       },
       "blk.0.ffn_neuron_ids"},
      {"stray-up",
       [](testing::GgufWriter& w) {
         w.AddTensor("blk.0.ffn_up.weight", TensorType::kF32, {64, 256},
                     std::vector<uint8_t>(64 * 256 * 4));
       },
       "blk.0.ffn_up.weight"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto m = Model::Load(Rebuild(good, std::string("malformed-") + c.name, c.change));
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find(c.expect), std::string::npos) << m.status().ToString();
  }
}

}  // namespace
}  // namespace sparrow::tools
