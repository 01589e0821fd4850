// The forward pass against a plain double-precision reference written from the transformer's
// definition, on small generated models of many shapes and weight types; plus the invariants
// the server will rely on (batch == token by token, thread count does not change results,
// bad input fails cleanly).
#include "engine/runtime/forward_pass.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <tuple>

#include "engine/kernels/dequantize.h"
#include "engine/kernels/quantize.h"
#include "engine/kernels/thread_pool.h"
#include "engine/sparse/ffn_factory.h"
#include "tests/util/synthetic_llama.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using testing::LlamaModelSpec;
using Mat = std::vector<double>;  // row-major rows x cols

Mat Dequant(const kernels::WeightMatrix& w) {
  Mat m(w.rows * w.cols);
  std::vector<float> row(w.cols);
  for (int64_t r = 0; r < w.rows; ++r) {
    kernels::DequantizeRow(w.type, static_cast<const uint8_t*>(w.data) + r * w.row_stride_bytes,
                           row.data(), w.cols);
    for (int64_t c = 0; c < w.cols; ++c) m[r * w.cols + c] = row[c];
  }
  return m;
}

Mat Transpose(const Mat& m, int64_t rows, int64_t cols) {
  Mat t(m.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = m[r * cols + c];
  return t;
}

std::vector<double> MatVec(const Mat& m, int64_t rows, int64_t cols, const std::vector<double>& x) {
  std::vector<double> y(rows);
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int64_t c = 0; c < cols; ++c) s += m[r * cols + c] * x[c];
    y[r] = s;
  }
  return y;
}

std::vector<double> RmsNorm(const std::vector<double>& x, const std::vector<float>& w, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double scale = 1.0 / std::sqrt(ss / x.size() + eps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * scale * w[i];
  return y;
}

void Rope(std::vector<double>& v, int64_t n_heads, int64_t hd, int64_t n_rot, int64_t pos,
          double base, bool neox) {
  for (int64_t h = 0; h < n_heads; ++h) {
    for (int64_t i = 0; i < n_rot / 2; ++i) {
      const double th = pos * std::pow(base, -2.0 * i / n_rot);
      const int64_t a = h * hd + (neox ? i : 2 * i),
                    b = h * hd + (neox ? i + n_rot / 2 : 2 * i + 1);
      const double x0 = v[a], x1 = v[b];
      v[a] = x0 * std::cos(th) - x1 * std::sin(th);
      v[b] = x0 * std::sin(th) + x1 * std::cos(th);
    }
  }
}

// All-position logits of `tokens` by the textbook llama forward pass.
std::vector<std::vector<double>> ReferenceLogits(const Model& model,
                                                 const std::vector<int32_t>& tokens) {
  const ModelConfig& c = model.config();
  const ModelWeights& w = model.weights();
  const int64_t n = tokens.size(), d = c.n_embd, hd = c.head_dim;
  const Mat emb = Dequant(w.token_embd), out = Dequant(w.output);
  std::vector<std::vector<double>> x(n);
  for (int64_t t = 0; t < n; ++t)
    x[t].assign(emb.begin() + tokens[t] * d, emb.begin() + (tokens[t] + 1) * d);
  for (const LayerWeights& l : w.layers) {
    const Mat wq = Dequant(l.wq), wk = Dequant(l.wk), wv = Dequant(l.wv), wo = Dequant(l.wo);
    const Mat wg = Dequant(l.ffn_gate), wu = Dequant(l.ffn_up);
    // PowerInfer files store down transposed (one row per neuron) and gate neurons by predictor.
    const Mat wd = c.powerinfer ? Transpose(Dequant(l.ffn_down_t), c.n_ff, d) : Dequant(l.ffn_down);
    const Mat fc1 = c.powerinfer ? Dequant(l.pred_fc1) : Mat();
    const Mat fc2 = c.powerinfer ? Dequant(l.pred_fc2) : Mat();
    std::vector<std::vector<double>> q(n), k(n), v(n);
    for (int64_t t = 0; t < n; ++t) {
      auto xn = RmsNorm(x[t], l.attn_norm, c.rms_eps);
      q[t] = MatVec(wq, c.q_dim(), d, xn);
      k[t] = MatVec(wk, c.kv_dim(), d, xn);
      v[t] = MatVec(wv, c.kv_dim(), d, xn);
      for (int64_t i = 0; i < static_cast<int64_t>(l.bq.size()); ++i) q[t][i] += l.bq[i];
      for (int64_t i = 0; i < static_cast<int64_t>(l.bk.size()); ++i) k[t][i] += l.bk[i];
      for (int64_t i = 0; i < static_cast<int64_t>(l.bv.size()); ++i) v[t][i] += l.bv[i];
      const bool neox = c.arch->rope_style == RopeStyle::kNeox;
      Rope(q[t], c.n_head, hd, c.n_rot, t, c.rope_freq_base, neox);
      Rope(k[t], c.n_head_kv, hd, c.n_rot, t, c.rope_freq_base, neox);
    }
    for (int64_t t = 0; t < n; ++t) {
      std::vector<double> att(c.q_dim(), 0.0);
      for (int64_t h = 0; h < c.n_head; ++h) {
        const int64_t kvh = h / (c.n_head / c.n_head_kv);
        std::vector<double> s(t + 1);
        double mx = -1e300, sum = 0;
        for (int64_t j = 0; j <= t; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < hd; ++e) dot += q[t][h * hd + e] * k[j][kvh * hd + e];
          s[j] = dot / std::sqrt(static_cast<double>(hd));
          mx = std::max(mx, s[j]);
        }
        for (double& e : s) sum += (e = std::exp(e - mx));
        for (int64_t j = 0; j <= t; ++j) {
          for (int64_t e = 0; e < hd; ++e) att[h * hd + e] += s[j] / sum * v[j][kvh * hd + e];
        }
      }
      auto o = MatVec(wo, d, c.q_dim(), att);
      for (int64_t i = 0; i < d; ++i) x[t][i] += o[i];
      auto xn = RmsNorm(x[t], l.ffn_norm, c.rms_eps);
      auto g = MatVec(wg, c.n_ff, d, xn), u = MatVec(wu, c.n_ff, d, xn);
      std::vector<double> logit(c.n_ff, 0.0);
      if (c.powerinfer) {
        const int64_t rank = l.pred_fc1.rows;
        auto hidden = MatVec(fc1, rank, d, x[t]);  // the residual before the FFN norm
        for (double& e : hidden) e = std::max(e, 0.0);
        logit = MatVec(fc2, c.n_ff, rank, hidden);
      }
      for (int64_t i = 0; i < c.n_ff; ++i) {
        switch (c.ffn_kind) {
          case FfnKind::kSwiGlu:
            g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
            break;
          case FfnKind::kReluGlu:
            g[i] = std::max(g[i], 0.0) * u[i];
            break;
          case FfnKind::kDReluGlu:
            g[i] = std::max(g[i], 0.0) * std::max(u[i], 0.0);
            break;
          case FfnKind::kGeGlu:  // GELU, tanh form
            g[i] = 0.5 * g[i] *
                   (1 + std::tanh(std::sqrt(2 / M_PI) * (g[i] + 0.044715 * g[i] * g[i] * g[i]))) *
                   u[i];
            break;
          case FfnKind::kGelu:  // an encoder's: this decoder reference never sees it
            ADD_FAILURE() << "ungated FFN in a decoder";
            break;
        }
        if (c.powerinfer && logit[i] < c.sparse_threshold) g[i] = 0;
      }
      auto dn = MatVec(wd, d, c.n_ff, g);
      for (int64_t i = 0; i < d; ++i) x[t][i] += dn[i];
    }
  }
  std::vector<std::vector<double>> logits(n);
  for (int64_t t = 0; t < n; ++t)
    logits[t] = MatVec(out, c.n_vocab, d, RmsNorm(x[t], w.output_norm, c.rms_eps));
  return logits;
}

double RelDiff(const float* ours, const std::vector<double>& ref) {
  double max_ref = 0, max_d = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    max_ref = std::max(max_ref, std::fabs(ref[i]));
    max_d = std::max(max_d, std::fabs(ours[i] - ref[i]));
  }
  return max_d / std::max(max_ref, 1e-12);
}

struct Case {
  std::string name;
  LlamaModelSpec spec;
  double tol;  // relative; quantized types also round activations, as llama.cpp does
};

LlamaModelSpec Spec(TensorType type, uint32_t n_embd, uint32_t n_ff, uint32_t n_head,
                    uint32_t n_head_kv) {
  LlamaModelSpec s;
  s.weight_type = s.embd_type = s.output_type = type;
  s.n_embd = n_embd;
  s.n_ff = n_ff;
  s.n_head = n_head;
  s.n_head_kv = n_head_kv;
  s.weight_scale = 0.1f;  // attention scores spread ~0.2: not uniform, not chaotic
  s.quantize = [](TensorType t, const float* src, void* dst, int64_t n) {
    kernels::QuantizeRow(t, src, dst, n);
  };
  return s;
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  cases.push_back({"f32_gqa", Spec(TensorType::kF32, 64, 96, 4, 2), 1e-4});
  {
    auto s = Spec(TensorType::kF32, 48, 80, 3, 3);  // odd head count, no GQA
    s.head_dim = 20;                                // q_dim 60 != n_embd
    s.rope_dim = 12;                                // partial rotary
    s.n_layer = 3;
    cases.push_back({"f32_head_dim_rope_dim", s, 1e-4});
  }
  {
    auto s = Spec(TensorType::kF32, 64, 96, 8, 1);  // multi-query
    s.tied_output = true;
    cases.push_back({"f32_mqa_tied", s, 1e-4});
  }
  cases.push_back({"f16", Spec(TensorType::kF16, 64, 96, 4, 2), 5e-3});
  cases.push_back({"bf16", Spec(TensorType::kBF16, 64, 96, 4, 2), 2e-2});
  for (TensorType t : {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_1, TensorType::kQ5_0,
                       TensorType::kQ5_1}) {
    cases.push_back({std::string(TensorTypeName(t)), Spec(t, 96, 160, 3, 1), 5e-2});
  }
  for (TensorType t : {TensorType::kQ2_K, TensorType::kQ3_K, TensorType::kQ4_K, TensorType::kQ5_K,
                       TensorType::kQ6_K}) {
    auto s = Spec(t, 256, 512, 4, 2);
    s.n_layer = 1;
    cases.push_back({std::string(TensorTypeName(t)), s, 5e-2});
  }
  // PowerInfer's sparse layout with every neuron on (threshold far below any logit, so no
  // neuron sits at the threshold): the sparse FFN's arithmetic against the definition. The
  // predictor's choice itself is tested in sparse_ffn_test.cc.
  for (auto [name, type, arch] : {std::tuple{"pwri_relu_f32", TensorType::kF32, "llama"},
                                  std::tuple{"pwri_bamboo_f16", TensorType::kF16, "bamboo"},
                                  std::tuple{"pwri_relu_q4_0", TensorType::kQ4_0, "llama"},
                                  std::tuple{"pwri_bamboo_q8_0", TensorType::kQ8_0, "bamboo"},
                                  std::tuple{"pwri_relu_q4_k", TensorType::kQ4_K, "llama"}}) {
    const bool k = GetTensorTypeTraits(type)->block_elems == 256;
    auto s = k ? Spec(type, 256, 512, 4, 2) : Spec(type, 64, 96, 4, 2);
    s.arch = arch;
    s.predictor_rank = 32;
    s.sparse_threshold = -1e30f;
    if (k) s.type_overrides = {{"fc1", TensorType::kF16}, {"fc2", TensorType::kF16}};
    cases.push_back({name, s,
                     type == TensorType::kF32   ? 1e-4
                     : type == TensorType::kF16 ? 5e-3
                                                : 5e-2});
  }
  {
    auto s = Spec(TensorType::kQ4_0, 64, 96, 4, 2);  // mixed types, as llama-quantize makes them
    s.output_type = TensorType::kQ8_0;
    s.type_overrides = {{"ffn_down", TensorType::kF16}, {"attn_v", TensorType::kQ8_0}};
    cases.push_back({"mixed", s, 5e-2});
  }
  return cases;
}

class ForwardPassTest : public ::testing::TestWithParam<Case> {
 protected:
  std::unique_ptr<Model> Load() {
    const std::string path = testing::TempPath(GetParam().name + ".gguf");
    Status st = testing::WriteLlamaModel(GetParam().spec, path);
    EXPECT_TRUE(st.ok()) << st.ToString();
    auto m = Model::Load(path);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    std::remove(path.c_str());  // the mapping stays valid after unlink
    return m.ok() ? std::move(m).value() : nullptr;
  }
  std::vector<int32_t> Tokens(const Model& m) {
    std::vector<int32_t> t;
    for (int i = 0; i < 11; ++i)
      t.push_back(static_cast<int32_t>((i * 37 + 5) % m.config().n_vocab));
    return t;
  }
};

TEST_P(ForwardPassTest, MatchesDoublePrecisionReference) {
  auto model = Load();
  ASSERT_NE(model, nullptr);
  const auto tokens = Tokens(*model);
  ForwardPass fp(*model, nullptr, MakeDefaultFeedForward(*model, nullptr));
  ContiguousKvCache cache(model->config().n_layer, 32, model->config().kv_dim());
  std::vector<float> logits;
  ASSERT_TRUE(fp.Run(tokens, 0, cache, /*all_logits=*/true, &logits).ok());
  const auto ref = ReferenceLogits(*model, tokens);
  const int64_t nv = model->config().n_vocab;
  double worst = 0;
  for (size_t t = 0; t < tokens.size(); ++t) {
    worst = std::max(worst, RelDiff(&logits[t * nv], ref[t]));
  }
  std::printf("[forward] %-24s worst relative logit difference %.3g (limit %.3g)\n",
              GetParam().name.c_str(), worst, GetParam().tol);
  EXPECT_LE(worst, GetParam().tol);
}

TEST_P(ForwardPassTest, BatchEqualsTokenByTokenAndThreadsDoNotMatter) {
  auto model = Load();
  ASSERT_NE(model, nullptr);
  const auto tokens = Tokens(*model);
  const ModelConfig& c = model->config();
  ForwardPass one(*model, nullptr, MakeDefaultFeedForward(*model, nullptr));
  ContiguousKvCache c1(c.n_layer, 32, c.kv_dim());
  std::vector<float> batch_logits;
  ASSERT_TRUE(one.Run(tokens, 0, c1, true, &batch_logits).ok());

  kernels::ThreadPool pool(2);
  ForwardPass two(*model, &pool, MakeDefaultFeedForward(*model, &pool));
  ContiguousKvCache c2(c.n_layer, 32, c.kv_dim());
  std::vector<float> step;
  // A 4-token chunk then single tokens: chunked prefill followed by decode.
  ASSERT_TRUE(two.Run({tokens.data(), 4}, 0, c2, true, &step).ok());
  for (size_t t = 4; t < tokens.size(); ++t) {
    ASSERT_TRUE(two.Run({&tokens[t], 1}, t, c2, false, &step).ok());
    const std::vector<float> want(batch_logits.begin() + t * c.n_vocab,
                                  batch_logits.begin() + (t + 1) * c.n_vocab);
    std::vector<double> wd(want.begin(), want.end());
    EXPECT_LE(RelDiff(step.data(), wd), 1e-5) << "position " << t;
  }
}

TEST_P(ForwardPassTest, BatchOfSequencesEqualsEachAlone) {
  auto model = Load();
  ASSERT_NE(model, nullptr);
  const ModelConfig& c = model->config();
  const auto tokens = Tokens(*model);
  kernels::ThreadPool pool(2);
  ForwardPass fp(*model, &pool, MakeDefaultFeedForward(*model, &pool));
  // Three sequences: one prefilling 5 tokens, two decoding one token after different histories.
  std::vector<ContiguousKvCache> caches;
  for (int i = 0; i < 3; ++i) caches.emplace_back(c.n_layer, 32, c.kv_dim());
  std::vector<float> scratch;
  ASSERT_TRUE(fp.Run({tokens.data(), 3}, 0, caches[1], false, &scratch).ok());
  ASSERT_TRUE(fp.Run({tokens.data() + 2, 6}, 0, caches[2], false, &scratch).ok());
  std::vector<ForwardPass::Segment> segs = {
      {&caches[0], {tokens.data(), 5}, 0, true},
      {&caches[1], {tokens.data() + 3, 1}, 3, false},
      {&caches[2], {tokens.data() + 8, 1}, 6, false},
  };
  std::vector<float> batched;
  ASSERT_TRUE(fp.RunBatch(segs, &batched).ok());
  ASSERT_EQ(batched.size(), static_cast<size_t>(7 * c.n_vocab));

  // The same computations one sequence at a time, on fresh caches.
  std::vector<float> want, step;
  ContiguousKvCache a(c.n_layer, 32, c.kv_dim()), b(c.n_layer, 32, c.kv_dim()),
      d(c.n_layer, 32, c.kv_dim());
  ASSERT_TRUE(fp.Run({tokens.data(), 5}, 0, a, true, &step).ok());
  want.insert(want.end(), step.begin(), step.end());
  ASSERT_TRUE(fp.Run({tokens.data(), 4}, 0, b, false, &step).ok());
  want.insert(want.end(), step.begin(), step.end());
  ASSERT_TRUE(fp.Run({tokens.data() + 2, 7}, 0, d, false, &step).ok());
  want.insert(want.end(), step.begin(), step.end());
  for (int64_t r = 0; r < 7; ++r) {
    std::vector<double> wd(want.begin() + r * c.n_vocab, want.begin() + (r + 1) * c.n_vocab);
    EXPECT_LE(RelDiff(&batched[r * c.n_vocab], wd), 1e-5) << "row " << r;
  }

  // A bad segment anywhere fails the whole batch before anything is computed.
  const int32_t bad = static_cast<int32_t>(c.n_vocab);
  segs[2].tokens = {&bad, 1};
  EXPECT_EQ(fp.RunBatch(segs, &batched).code(), StatusCode::kOutOfRange);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ForwardPassTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

TEST(ForwardPassErrors, BadTokenAndFullContextFailWithoutCrash) {
  LlamaModelSpec s;
  const std::string path = testing::TempPath("errors.gguf");
  ASSERT_TRUE(testing::WriteLlamaModel(s, path).ok());
  auto model = Model::Load(path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const ModelConfig& c = (*model)->config();
  ForwardPass fp(**model, nullptr, MakeDefaultFeedForward(**model, nullptr));
  ContiguousKvCache cache(c.n_layer, 4, c.kv_dim());
  std::vector<float> logits;
  const int32_t bad = static_cast<int32_t>(c.n_vocab);
  Status st = fp.Run({&bad, 1}, 0, cache, false, &logits);
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
  EXPECT_NE(st.message().find(std::to_string(bad)), std::string::npos) << st.message();
  const int32_t neg = -1;
  EXPECT_EQ(fp.Run({&neg, 1}, 0, cache, false, &logits).code(), StatusCode::kOutOfRange);
  std::vector<int32_t> five(5, 1);
  st = fp.Run(five, 0, cache, false, &logits);
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
  EXPECT_NE(st.message().find("context"), std::string::npos) << st.message();
  EXPECT_TRUE(fp.Run({five.data(), 4}, 0, cache, false, &logits).ok());
  EXPECT_FALSE(fp.Run({five.data(), 1}, 4, cache, false, &logits).ok());
  EXPECT_EQ(fp.Run({}, 0, cache, false, &logits).code(), StatusCode::kInvalidArgument);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace sparrow
