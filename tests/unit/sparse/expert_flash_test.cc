// Experts on flash: `sparrow convert` of each mixture-of-experts family writes every expert's
// matrices into one record (hot experts first, the router keeping its numbering), and the model
// computes from the mapping or from the store under a small cache exactly as from the stacked
// tensors; the store's read-ahead counts right and wrong guesses and a wrong one changes nothing;
// a failed expert read fails only the tokens routed to that expert; a batch reads each expert it
// needs once; a resize while experts are pinned leaves them intact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <set>
#include <thread>

#include "engine/kernels/dequantize.h"
#include "engine/kernels/thread_pool.h"
#include "engine/model/expert_bundles.h"
#include "engine/model/model.h"
#include "engine/runtime/forward_pass.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/moe_ffn.h"
#include "engine/sparse/expert_store_source.h"
#include "engine/sparse/neuron_store.h"
#include "engine/sparse/sparse_plan.h"
#include "engine/tools/bundle_convert.h"
#include "tests/util/fault_env.h"
#include "tests/util/synthetic_arch.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

// The source model of a family: ../shared/arch's qwen3moe, or a synthetic one written here.
std::string SourceModel(const std::string& family) {
  if (family == "qwen3moe") return testing::SharedDir() + "/arch/models/synth-qwen3moe-f32.gguf";
  auto f = testing::ParseArchFamily(family);
  EXPECT_TRUE(f.has_value()) << family;
  const std::string path = testing::TempPath("experts-" + family + "-src.gguf");
  EXPECT_TRUE(testing::WriteArchModel({*f, 7}, path).ok());
  return path;
}

// Converted with each layer's experts in a shuffled order (the file order would hide a mix-up
// between the router's numbering and the records').
std::string Converted(const std::string& src, const std::string& name,
                      bool expert_neurons = false) {
  tools::ConvertOptions o;
  o.model = src;
  o.expert_neurons = expert_neurons;
  o.output = testing::TempPath("experts-" + name + "-bundles.gguf");
  o.order = [](int64_t layer, int64_t n) {
    std::vector<int32_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937(static_cast<uint32_t>(layer) + 11));
    return order;
  };
  auto sum = tools::ConvertToBundles(o);
  EXPECT_TRUE(sum.ok()) << sum.status().ToString();
  EXPECT_GT(sum.ok() ? sum->n_expert : 0, 0);
  return o.output;
}

std::unique_ptr<Model> Load(const std::string& path) {
  auto m = Model::Load(path);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

// Greedy decoding: the prompt, then `n` tokens one at a time; every step's logits.
std::vector<std::vector<float>> GreedyLogits(const Model& model, std::unique_ptr<FeedForward> ffn,
                                             kernels::ThreadPool* pool, int n,
                                             FfnCounters* counters = nullptr) {
  const ModelConfig& c = model.config();
  ForwardPass fp(model, pool, std::move(ffn));
  ContiguousKvCache cache(c.n_layer, 128, c.kv_dim());
  std::vector<int32_t> tokens = {1, 403, 407, 261, 378};
  std::vector<std::vector<float>> out;
  std::vector<float> logits;
  int64_t pos = 0;
  std::vector<int32_t> step = tokens;
  for (int i = 0; i < n; ++i) {
    const Status st = fp.Run(step, pos, cache, false, &logits);
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (!st.ok()) break;
    pos += static_cast<int64_t>(step.size());
    out.push_back(logits);
    const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
    step = {static_cast<int32_t>(best)};
  }
  if (counters) *counters = fp.ffn().counters();
  return out;
}

std::shared_ptr<NeuronStore> OpenStore(const Model& model, size_t cache_bytes, Env* env = nullptr,
                                       bool read_ahead = true, bool adaptive = true) {
  NeuronStoreOptions o;
  o.cache_bytes = cache_bytes;
  o.env = env;
  o.read_ahead = read_ahead;
  o.adaptive = adaptive;
  auto s = NeuronStore::Open(model, o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::shared_ptr<NeuronStore>(std::move(s).value()) : nullptr;
}

size_t AllExpertBytes(const Model& m) {
  return m.weights().bundles->bundle_bytes();
}

class ExpertFamilyTest : public ::testing::TestWithParam<const char*> {};

// "smallthinker+neurons": converted with --expert-neurons.
std::pair<std::string, bool> FamilyOf(const std::string& param) {
  const auto plus = param.find('+');
  return {param.substr(0, plus), plus != std::string::npos};
}

TEST_P(ExpertFamilyTest, RecordsHoldEachExpertsMatricesAndTheRouterKeepsItsNumbering) {
  const auto [family, neurons] = FamilyOf(GetParam());
  const std::string src = SourceModel(family);
  auto a = Load(src);
  auto b = Load(Converted(src, family, neurons));
  ASSERT_TRUE(a && b);
  const ModelConfig& c = a->config();
  const auto& layout = b->weights().bundles;
  ASSERT_NE(layout, nullptr);
  EXPECT_TRUE(layout->experts);
  for (int64_t il = 0; il < c.n_layer; ++il) {
    const LayerBundles& lb = layout->layers[il];
    ASSERT_EQ(static_cast<int64_t>(lb.neuron_ids.size()), c.n_expert);
    EXPECT_EQ(lb.record_bytes % 4096, 0u);
    EXPECT_EQ(b->weights().layers[il].ffn_gate_exps.data, nullptr);
    for (int64_t e = 0; e < c.n_expert; ++e) {
      const int32_t r = lb.record_of[e];
      ASSERT_EQ(lb.neuron_ids[r], e);
      const ExpertMatrices want = StackedExpert(c, a->weights().layers[il], e);
      const ExpertMatrices got = RecordExpert(c, lb, lb.records + r * lb.record_bytes);
      // With --expert-neurons (the param's "+neurons"), ReGLU experts hold neuron bundles: per
      // neuron its up row and its column of down as a row (F32 here: the column's values).
      ASSERT_EQ(got.down_rows, neurons);
      for (auto [w, g] : {std::pair{want.gate, got.gate}, {want.up, got.up}}) {
        ASSERT_EQ(w.type, g.type);
        ASSERT_EQ(w.rows, g.rows);
        ASSERT_EQ(w.cols, g.cols);
        for (int64_t i = 0; i < w.rows; ++i) {
          ASSERT_EQ(0, std::memcmp(static_cast<const uint8_t*>(w.data) + i * w.row_stride_bytes,
                                   static_cast<const uint8_t*>(g.data) + i * g.row_stride_bytes,
                                   w.row_stride_bytes))
              << "layer " << il << " expert " << e << " row " << i;
        }
      }
      const auto* wd = static_cast<const float*>(want.down.data);
      for (int64_t i = 0; i < c.n_embd; ++i) {
        for (int64_t j = 0; j < c.n_ff_exp; ++j) {
          const auto* gd = static_cast<const uint8_t*>(got.down.data);
          const float value =
              got.down_rows ? reinterpret_cast<const float*>(gd + j * got.down.row_stride_bytes)[i]
                            : reinterpret_cast<const float*>(gd + i * got.down.row_stride_bytes)[j];
          ASSERT_EQ(value, wd[i * c.n_ff_exp + j]) << "layer " << il << " expert " << e;
        }
      }
    }
  }
}

TEST_P(ExpertFamilyTest, ConvertedFileDecodesAsTheSourceFromMemoryAndFromFlash) {
  const auto [family, neurons] = FamilyOf(GetParam());
  const std::string src = SourceModel(family);
  auto a = Load(src);
  auto b = Load(Converted(src, family, neurons));
  ASSERT_TRUE(a && b);
  kernels::ThreadPool pool(2);
  const int kSteps = 12;
  auto want = GreedyLogits(*a, std::make_unique<MoeFfn>(*a, &pool), &pool, kSteps);
  ASSERT_EQ(want.size(), static_cast<size_t>(kSteps));
  FfnCounters n;
  const auto from_memory = GreedyLogits(*b, std::make_unique<MoeFfn>(*b, &pool), &pool, kSteps, &n);
  const ModelConfig& c = a->config();
  EXPECT_EQ(n.neurons_total, n.decode_tokens * c.n_expert * c.n_ff_exp);
  const int64_t chosen = n.decode_tokens * c.n_expert_used * c.n_ff_exp;
  if (c.ffn_kind == FfnKind::kReluGlu) {
    // ReGLU: only the neurons the gate opened are computed (about half on random weights).
    EXPECT_GT(n.neurons_computed, chosen / 4);
    EXPECT_LT(n.neurons_computed, chosen * 3 / 4);
  } else {
    EXPECT_EQ(n.neurons_computed, chosen);
  }
  if (neurons) {
    // Neuron bundles: the same values summed in another order.
    ASSERT_EQ(from_memory.size(), want.size());
    for (size_t s = 0; s < want.size(); ++s) {
      float worst = 0, top = 0;
      for (size_t i = 0; i < want[s].size(); ++i) {
        worst = std::max(worst, std::fabs(from_memory[s][i] - want[s][i]));
        top = std::max(top, std::fabs(want[s][i]));
      }
      EXPECT_LE(worst, 1e-5f * top) << "step " << s;
    }
    // From here on the converted file's own values are the reference.
    want = from_memory;
  } else {
    // The same bytes through the same kernels (a ReGLU expert's closed neurons' up rows
    // skipped): bit for bit.
    EXPECT_EQ(from_memory, want);
  }
  // A quarter of the experts in memory: hot ones, a cache, the rest read per step (and ahead).
  auto store = OpenStore(*b, AllExpertBytes(*b) / 4);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(GreedyLogits(
                *b, std::make_unique<MoeFfn>(*b, &pool, std::make_unique<StoreExpertSource>(store)),
                &pool, kSteps),
            want);
  const NeuronStoreStats st = store->stats();
  EXPECT_GT(st.reads.records, 0);
  EXPECT_GT(st.prefetch_reads, 0);
  EXPECT_LE(st.prefetch_used, st.prefetch_reads);
  // Nothing in memory: every expert read for its step.
  auto none = OpenStore(*b, 0);
  EXPECT_EQ(GreedyLogits(
                *b, std::make_unique<MoeFfn>(*b, &pool, std::make_unique<StoreExpertSource>(none)),
                &pool, kSteps),
            want);
}

INSTANTIATE_TEST_SUITE_P(Families, ExpertFamilyTest,
                         ::testing::Values("qwen3moe", "mixtral", "olmoe", "smallthinker",
                                           "smallthinker+neurons"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '+', '_');
                           return n;
                         });

class ExpertStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string src = SourceModel("olmoe");
    model_ = Load(Converted(src, "store"));
    ASSERT_NE(model_, nullptr);
    src_ = Load(src);
    ASSERT_NE(src_, nullptr);
  }
  const LayerBundles& layer(int il) const { return model_->weights().bundles->layers[il]; }
  bool RecordIntact(int il, int32_t r, const uint8_t* p) const {
    const LayerBundles& lb = layer(il);
    return std::memcmp(p, lb.records + r * lb.record_bytes, lb.record_bytes) == 0;
  }
  // n tokens of normed FFN input, seeded.
  std::vector<float> Inputs(int64_t n, uint32_t seed) const {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist;
    std::vector<float> x(n * model_->config().n_embd);
    for (float& v : x) v = dist(rng);
    return x;
  }
  std::unique_ptr<Model> model_, src_;
};

TEST_F(ExpertStoreTest, WrongGuessCostsOnlyItsReadsAndRightOneIsCounted) {
  // Four experts' bytes: each layer's hottest expert resident, two cache slots.
  auto store = OpenStore(*model_, 4 * layer(0).record_bytes);
  ASSERT_NE(store, nullptr);
  const std::vector<int32_t> guess = {5, 6}, actual = {1, 2};
  std::vector<const uint8_t*> recs(2);
  std::vector<int32_t> failed;
  store->Start(0, std::vector<int32_t>{0}, recs.data());
  store->Prefetch(1, guess);
  ASSERT_TRUE(store->Finish(&failed).ok());
  store->Release();
  ASSERT_TRUE(store->Acquire(1, actual, recs.data(), &failed).ok());
  EXPECT_TRUE(failed.empty());
  for (size_t k = 0; k < actual.size(); ++k) EXPECT_TRUE(RecordIntact(1, actual[k], recs[k]));
  store->Release();
  NeuronStoreStats st = store->stats();
  EXPECT_EQ(st.prefetch_reads, 2);
  EXPECT_EQ(st.prefetch_used, 0);
  // A right guess: the next Start finds them cached.
  const int64_t hits = st.cache.hits;
  store->Start(0, std::vector<int32_t>{0}, recs.data());
  store->Prefetch(1, std::vector<int32_t>{3, 4});
  ASSERT_TRUE(store->Finish(&failed).ok());
  store->Release();
  ASSERT_TRUE(store->Acquire(1, std::vector<int32_t>{3, 4}, recs.data(), &failed).ok());
  EXPECT_TRUE(RecordIntact(1, 3, recs[0]));
  EXPECT_TRUE(RecordIntact(1, 4, recs[1]));
  store->Release();
  st = store->stats();
  EXPECT_EQ(st.prefetch_reads, 4);
  EXPECT_EQ(st.prefetch_used, 2);
  EXPECT_EQ(st.cache.hits, hits + 2);
  // Switched off: nothing read ahead.
  auto quiet = OpenStore(*model_, 4 * layer(0).record_bytes, nullptr, /*read_ahead=*/false);
  quiet->Prefetch(1, guess);
  EXPECT_EQ(quiet->stats().prefetch_reads, 0);
}

// Guesses are scored at the next Start of their layer, read or not: while most miss, reads on
// them pause (the bandwidth goes to the step's own reads); once most hit again, they resume.
TEST_F(ExpertStoreTest, ReadAheadPausesWhileGuessesMissAndResumesWhenTheyHit) {
  // Each layer's hottest expert and two slots, which keep them (the thrash rule would give them
  // to the hot segment).
  auto store = OpenStore(*model_, 4 * layer(0).record_bytes, nullptr, true, /*adaptive=*/false);
  ASSERT_NE(store, nullptr);
  std::vector<const uint8_t*> recs(3);
  std::vector<int32_t> failed;
  auto step = [&](const std::vector<int32_t>& guess, const std::vector<int32_t>& actual) {
    store->Start(0, std::vector<int32_t>{0}, recs.data());
    store->Prefetch(1, guess);
    ASSERT_TRUE(store->Finish(&failed).ok());
    store->Release();
    ASSERT_TRUE(store->Acquire(1, actual, recs.data(), &failed).ok());
    for (size_t k = 0; k < actual.size(); ++k) ASSERT_TRUE(RecordIntact(1, actual[k], recs[k]));
    store->Release();
  };
  for (int i = 0; i < 200; ++i) step({5, 6, 7}, {1, 2});
  NeuronStoreStats st = store->stats();
  EXPECT_FALSE(st.read_ahead_on);
  EXPECT_EQ(st.guesses_right, 0);
  const int64_t paused_reads = st.prefetch_reads, paused_guesses = st.guesses;
  for (int i = 0; i < 20; ++i) step({5, 6, 7}, {1, 2});
  st = store->stats();
  EXPECT_EQ(st.prefetch_reads, paused_reads);  // scored, not read
  EXPECT_GT(st.guesses, paused_guesses);
  // Guesses that come true (each set evicted by the other, so every guess would be read).
  for (int i = 0; i < 300; ++i) {
    const std::vector<int32_t> set =
        i % 2 ? std::vector<int32_t>{3, 4} : std::vector<int32_t>{5, 6};
    step(set, set);
  }
  st = store->stats();
  EXPECT_TRUE(st.read_ahead_on);
  EXPECT_GT(st.prefetch_reads, paused_reads);
  EXPECT_GT(st.prefetch_used, 0);
}

TEST_F(ExpertStoreTest, ResizeWhileExpertsArePinnedLeavesThemIntact) {
  const size_t rec = layer(0).record_bytes;
  auto store = OpenStore(*model_, 12 * rec);
  ASSERT_NE(store, nullptr);
  const std::vector<int32_t> ids = {0, 1, 5, 7};
  std::vector<const uint8_t*> recs(ids.size());
  std::vector<int32_t> failed;
  ASSERT_TRUE(store->Acquire(0, ids, recs.data(), &failed).ok());
  std::thread shrink([&] { EXPECT_TRUE(store->Resize(rec).ok()); });
  for (size_t k = 0; k < ids.size(); ++k) EXPECT_TRUE(RecordIntact(0, ids[k], recs[k]));
  store->Release();
  shrink.join();
  EXPECT_EQ(store->stats().capacity_bytes, rec);
  EXPECT_LE(store->stats().hot_bytes + store->stats().cache.used * rec, rec);
  // And back up: the records read again are the file's.
  ASSERT_TRUE(store->Resize(16 * rec).ok());
  ASSERT_TRUE(store->Acquire(0, ids, recs.data(), &failed).ok());
  for (size_t k = 0; k < ids.size(); ++k) EXPECT_TRUE(RecordIntact(0, ids[k], recs[k]));
  store->Release();
}

TEST_F(ExpertStoreTest, BatchReadsEachExpertItNeedsOnce) {
  kernels::ThreadPool pool(2);
  const ModelConfig& c = model_->config();
  auto store = OpenStore(*model_, 0);
  ASSERT_NE(store, nullptr);
  MoeFfn ffn(*model_, &pool, std::make_unique<StoreExpertSource>(store));
  struct Distinct : ExpertObserver {
    int64_t k = 0;
    std::set<int32_t> experts;
    int64_t pairs = 0;
    void OnRouted(int64_t, const FfnInput& in, const int32_t* chosen) override {
      for (int64_t i = 0; i < in.n * k; ++i) experts.insert(chosen[i]);
      pairs += in.n * k;
    }
  } seen;
  seen.k = c.n_expert_used;
  ffn.set_observer(&seen);
  const int64_t n = 16;
  const std::vector<float> x = Inputs(n, 3);
  std::vector<float> out(n * c.n_embd);
  const FfnInput in{x.data(), x.data(), nullptr, n, nullptr};
  ASSERT_TRUE(ffn.Compute(0, in, out.data()).ok());
  ASSERT_LT(seen.experts.size(), static_cast<size_t>(seen.pairs));  // tokens share experts
  EXPECT_EQ(store->stats().reads.records, static_cast<int64_t>(seen.experts.size()));
  // The same output as the source model's stacked experts.
  std::vector<float> want(out.size());
  MoeFfn dense(*src_, &pool);
  ASSERT_TRUE(dense.Compute(0, in, want.data()).ok());
  EXPECT_EQ(out, want);
}

TEST_F(ExpertStoreTest, FailedExpertReadFailsOnlyTheTokensRoutedToIt) {
  kernels::ThreadPool pool(2);
  const ModelConfig& c = model_->config();
  testing::FaultyEnv env;
  auto store = OpenStore(*model_, 0, &env);
  ASSERT_NE(store, nullptr);
  MoeFfn ffn(*model_, &pool, std::make_unique<StoreExpertSource>(store));
  struct Routes : ExpertObserver {
    std::vector<int32_t> chosen;
    void OnRouted(int64_t il, const FfnInput& in, const int32_t* ch) override {
      if (il == 0) chosen.assign(ch, ch + in.n * k);
    }
    int64_t k = 0;
  } routes;
  routes.k = c.n_expert_used;
  ffn.set_observer(&routes);
  const int64_t n = 16;
  const std::vector<float> x = Inputs(n, 5);
  std::vector<float> want(n * c.n_embd), out(want.size());
  MoeFfn dense(*src_, &pool);
  const FfnInput plain{x.data(), x.data(), nullptr, n, nullptr};
  ASSERT_TRUE(dense.Compute(0, plain, want.data()).ok());
  ASSERT_TRUE(ffn.Compute(0, plain, out.data()).ok());  // learns the routing
  ASSERT_FALSE(routes.chosen.empty());
  // The record of the first token's first expert fails to read.
  const int32_t bad = routes.chosen[0];
  const LayerBundles& lb = layer(0);
  const uint64_t off = lb.file_offset + lb.record_of[bad] * lb.record_bytes;
  env.faults().Set(off, off + lb.record_bytes);
  std::vector<uint8_t> failed(n, 0);
  const FfnInput in{x.data(), x.data(), nullptr, n, failed.data()};
  const Status st = ffn.Compute(0, in, out.data());
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.ToString().find("injected EIO"), std::string::npos) << st.ToString();
  int64_t lost = 0;
  for (int64_t t = 0; t < n; ++t) {
    const bool uses = std::count(&routes.chosen[t * c.n_expert_used],
                                 &routes.chosen[(t + 1) * c.n_expert_used], bad) > 0;
    EXPECT_EQ(failed[t] != 0, uses) << "token " << t;
    lost += uses;
    if (!uses) {
      EXPECT_TRUE(std::equal(&out[t * c.n_embd], &out[(t + 1) * c.n_embd], &want[t * c.n_embd]))
          << "token " << t;
    }
  }
  EXPECT_GT(lost, 0);
  EXPECT_LT(lost, n);
  // The fault gone, the expert is read again.
  env.faults().Clear();
  std::fill(failed.begin(), failed.end(), 0);
  ASSERT_TRUE(ffn.Compute(0, in, out.data()).ok());
  EXPECT_EQ(out, want);
}

// A converted file whose record order is not a permutation (two records claim one expert) is
// refused at load, the tensor and entry named; converting a converted file is refused too.
TEST(ExpertConvertTest, CorruptExpertOrderIsRefusedByName) {
  const std::string good = Converted(SourceModel("mixtral"), "corrupt");
  auto f = GgufFile::Open(good);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufTensorInfo* ids = (*f)->FindTensor(ExpertIdsTensorName(1));
  ASSERT_NE(ids, nullptr);
  const size_t at = static_cast<size_t>(ids->data - (*f)->base());
  int32_t first = 0;
  std::memcpy(&first, ids->data, sizeof first);
  const std::string bad = testing::TempPath("experts-corrupt.gguf");
  std::filesystem::copy_file(good, bad);
  {
    std::fstream out(bad, std::ios::in | std::ios::out | std::ios::binary);
    out.seekp(static_cast<std::streamoff>(at + sizeof(int32_t)));  // entry 1 = entry 0
    out.write(reinterpret_cast<const char*>(&first), sizeof first);
    ASSERT_TRUE(out.good());
  }
  auto m = Model::Load(bad);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().ToString().find("blk.1.ffn_expert_ids"), std::string::npos)
      << m.status().ToString();
  EXPECT_NE(m.status().ToString().find("not a permutation"), std::string::npos);

  tools::ConvertOptions o;
  o.model = good;
  o.output = testing::TempPath("experts-twice.gguf");
  auto again = tools::ConvertToBundles(o);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().ToString().find("already converted"), std::string::npos);
}

// --expert-neurons: a ReGLU expert's bundles are its up row and down column, side by side; on
// experts whose neurons are never exactly zero it is refused.
TEST(ExpertConvertTest, ExpertNeuronsBundleReluExpertsOnly) {
  auto bundled = Load(Converted(SourceModel("smallthinker"), "neurons", true));
  ASSERT_NE(bundled, nullptr);
  const LayerBundles& lb = bundled->weights().bundles->layers[0];
  EXPECT_EQ(lb.neuron_stride, 2 * kernels::RowBytes(TensorType::kF32, bundled->config().n_embd));
  EXPECT_EQ(lb.down_offset - lb.up_offset, lb.neuron_stride / 2);

  tools::ConvertOptions o;
  o.model = SourceModel("olmoe");
  o.output = testing::TempPath("experts-olmoe-neurons.gguf");
  o.expert_neurons = true;
  auto sum = tools::ConvertToBundles(o);
  ASSERT_FALSE(sum.ok());
  EXPECT_NE(sum.status().ToString().find("--expert-neurons needs ReGLU experts"), std::string::npos)
      << sum.status().ToString();
}

TEST(ExpertConvertTest, MoeRefusesSparsityAndUnconvertedCache) {
  auto m = Load(SourceModel("mixtral"));
  ASSERT_NE(m, nullptr);
  SparsityOptions o;
  o.cache_bytes = 1 << 20;
  auto p = MakeSparsePlan(*m, o, nullptr);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().ToString().find("sparrow convert"), std::string::npos);
  o = {};
  o.sparsity = 0.5;
  p = MakeSparsePlan(*m, o, nullptr);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().ToString().find("not supported yet"), std::string::npos);
}

}  // namespace
}  // namespace sparrow
