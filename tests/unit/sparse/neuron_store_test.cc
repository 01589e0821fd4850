// NeuronStore: a converted file's records served from the hot segment, the cache or flash, each
// equal to the file's bytes; whole layers staged for prompts; Resize moving the budget both ways
// (the hot segment's pages given back, then refilled a little per step) and waiting for the
// step's pinned layer; injected read failures failing only their records, then retried; the
// pipelined Start handing out what is in memory while the misses are still being read.
#include "engine/sparse/neuron_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <numeric>
#include <random>
#include <set>
#include <thread>

#include "tests/util/converted_model.h"
#include "tests/util/fault_env.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

class NeuronStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = testing::WriteConvertedSyntheticModel("store", TensorType::kQ8_0);
    auto m = Model::Load(path_);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value();
    ASSERT_NE(model_->weights().bundles, nullptr);
  }

  const NeuronBundleLayout& layout() const { return *model_->weights().bundles; }
  size_t record_bytes() const { return layout().layers[0].record_bytes; }
  size_t all_bytes() const {
    return record_bytes() * 256 * static_cast<size_t>(model_->config().n_layer);
  }

  std::unique_ptr<NeuronStore> Open(size_t cache_bytes, double hot_share, Env* env = nullptr) {
    NeuronStoreOptions o;
    o.cache_bytes = cache_bytes;
    o.hot_share = hot_share;
    o.env = env;
    auto s = NeuronStore::Open(*model_, o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  // Acquires `ids` of `layer`, checks every delivered record against the mapped file, releases;
  // returns the indices whose read failed.
  std::vector<int32_t> AcquireAndCheck(NeuronStore& s, int32_t layer,
                                       const std::vector<int32_t>& ids, Status* status = nullptr) {
    const LayerBundles& lb = layout().layers[layer];
    std::vector<const uint8_t*> recs(ids.size());
    std::vector<int32_t> failed;
    const Status st = s.Acquire(layer, ids, recs.data(), &failed);
    if (status) *status = st;
    const std::set<int32_t> bad(failed.begin(), failed.end());
    for (size_t k = 0; k < ids.size(); ++k) {
      if (bad.count(static_cast<int32_t>(k))) continue;
      EXPECT_EQ(std::memcmp(recs[k], lb.records + ids[k] * lb.record_bytes, lb.record_bytes), 0)
          << "layer " << layer << " record " << ids[k];
    }
    s.Release();
    return failed;
  }

  std::string path_;
  std::unique_ptr<Model> model_;
};

TEST_F(NeuronStoreTest, RecordsFromTheHotSegmentTheCacheAndFlashEqualTheFile) {
  // A tenth of the bundles, half of it hot: each layer's first ~12 records are preloaded, the
  // cache holds ~12 per layer's worth, the rest comes from flash.
  auto s = Open(all_bytes() / 10, 0.5);
  ASSERT_NE(s, nullptr);
  const NeuronStoreStats open = s->stats();
  const int64_t hot_per_layer = open.hot_records / model_->config().n_layer;
  EXPECT_GT(hot_per_layer, 5);
  EXPECT_LT(hot_per_layer, 20);
  EXPECT_EQ(open.hot_bytes, static_cast<size_t>(open.hot_records) * record_bytes());
  const std::vector<int32_t> ids = {0, 1, 3, 40, 41, 42, 200, 255};
  EXPECT_TRUE(AcquireAndCheck(*s, 1, ids).empty());
  NeuronStoreStats st = s->stats();
  EXPECT_EQ(st.hot_hits, 3);                        // 0 1 3
  EXPECT_EQ(st.cache.misses, 5);                    // the others, read and kept
  EXPECT_EQ(st.reads.reads - open.reads.reads, 3);  // {40 41 42} {200} {255}
  EXPECT_TRUE(AcquireAndCheck(*s, 1, ids).empty());
  st = s->stats();
  EXPECT_EQ(st.hot_hits, 6);
  EXPECT_EQ(st.cache.hits, 5);
  EXPECT_EQ(st.reads.reads - open.reads.reads, 3) << "the second pass reads nothing";
  EXPECT_EQ(st.cache.pinned, 0);
  EXPECT_EQ(st.capacity_bytes, all_bytes() / 10);
}

TEST_F(NeuronStoreTest, WithNoMemoryEveryRecordComesFromFlash) {
  for (bool direct : {true, false}) {
    NeuronStoreOptions o;
    o.cache_bytes = 0;
    o.direct = direct;
    auto s = NeuronStore::Open(*model_, o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    std::vector<int32_t> ids(256);
    std::iota(ids.begin(), ids.end(), 0);
    for (int pass = 0; pass < 2; ++pass) EXPECT_TRUE(AcquireAndCheck(**s, 1, ids).empty());
    const NeuronStoreStats st = (*s)->stats();
    EXPECT_EQ(st.hot_records, 0);
    EXPECT_EQ(st.cache.bypassed, 512);
    EXPECT_EQ(st.reads.records, 512);
    EXPECT_EQ(st.cache.mapped_bytes, 0u);
  }
}

TEST_F(NeuronStoreTest, ReadLayerStagesEveryRecord) {
  auto s = Open(all_bytes() / 4, 0.5);
  ASSERT_NE(s, nullptr);
  for (int32_t layer : {0, 1}) {
    const uint8_t* recs = nullptr;
    ASSERT_TRUE(s->ReadLayer(layer, &recs).ok());
    const LayerBundles& lb = layout().layers[layer];
    EXPECT_EQ(std::memcmp(recs, lb.records, 256 * lb.record_bytes), 0) << "layer " << layer;
  }
  EXPECT_EQ(s->stats().layer_reads, 2);
  EXPECT_GE(s->stats().staging_bytes, 256 * record_bytes());
}

TEST_F(NeuronStoreTest, ResizeMovesTheBudgetBothWays) {
  auto s = Open(all_bytes(), 1.0);  // everything hot
  ASSERT_NE(s, nullptr);
  const int64_t n_layer = model_->config().n_layer;
  EXPECT_EQ(s->stats().hot_records, 256 * n_layer);
  std::vector<int32_t> ids(64);
  std::iota(ids.begin(), ids.end(), 100);
  EXPECT_TRUE(AcquireAndCheck(*s, 0, ids).empty());
  const int64_t reads = s->stats().reads.reads;
  EXPECT_EQ(s->stats().cache.misses, 0);

  ASSERT_TRUE(s->Resize(all_bytes() / 8).ok());
  NeuronStoreStats st = s->stats();
  EXPECT_EQ(st.hot_records, 32 * n_layer);
  EXPECT_LE(st.hot_bytes + st.cache.capacity * record_bytes(), all_bytes() / 8);
  EXPECT_TRUE(AcquireAndCheck(*s, 0, ids).empty());  // now past the hot segment: from flash
  EXPECT_GT(s->stats().reads.reads, reads);

  // Growing back refills each layer's hot segment a little per step, with correct bytes.
  ASSERT_TRUE(s->Resize(all_bytes()).ok());
  for (int step = 0; step < 4; ++step) {
    for (int32_t layer = 0; layer < n_layer; ++layer) {
      EXPECT_TRUE(AcquireAndCheck(*s, layer, ids).empty());
    }
  }
  EXPECT_EQ(s->stats().hot_records, 256 * n_layer);
}

TEST_F(NeuronStoreTest, AShrinkWaitsForTheStepsPinnedLayer) {
  auto s = Open(all_bytes(), 1.0);
  ASSERT_NE(s, nullptr);
  std::vector<int32_t> ids = {200, 201};
  std::vector<const uint8_t*> recs(2);
  std::vector<int32_t> failed;
  ASSERT_TRUE(s->Acquire(0, ids, recs.data(), &failed).ok());
  std::atomic<bool> done{false};
  std::thread resizer([&] {
    EXPECT_TRUE(s->Resize(0).ok());
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(done) << "the hot pages in use must not be dropped";
  const LayerBundles& lb = layout().layers[0];
  EXPECT_EQ(std::memcmp(recs[0], lb.records + 200 * lb.record_bytes, lb.record_bytes), 0);
  s->Release();
  resizer.join();
  EXPECT_TRUE(done);
  EXPECT_EQ(s->stats().hot_records, 0);
  EXPECT_EQ(s->stats().cache.mapped_bytes, 0u);
}

TEST_F(NeuronStoreTest, AFailedReadFailsItsRecordsAndIsRetriedNextTime) {
  testing::FaultyEnv env;
  auto s = Open(all_bytes() / 4, 0.0, &env);
  ASSERT_NE(s, nullptr);
  const LayerBundles& lb = layout().layers[1];
  const uint64_t bad = lb.file_offset + 50 * lb.record_bytes;
  env.faults().Set(bad, bad + 1);
  Status st;
  const std::vector<int32_t> ids = {10, 50, 90};
  std::vector<int32_t> failed = AcquireAndCheck(*s, 1, ids, &st);
  EXPECT_EQ(failed, (std::vector<int32_t>{1}));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(path_), std::string::npos) << st.ToString();
  EXPECT_GT(env.faults().injected, 0);
  EXPECT_EQ(s->stats().cache.pinned, 0);
  env.faults().Clear();
  EXPECT_TRUE(AcquireAndCheck(*s, 1, ids).empty()) << "the failed record was not kept";
  const NeuronStoreStats stats = s->stats();
  EXPECT_EQ(stats.cache.hits, 2);  // 10 and 90 were read and kept the first time
  EXPECT_EQ(stats.reads.failed_reads, 1);
}

// Start returns with the misses still on their way: the hot and cached records are usable while
// the device holds every read back, and the rest arrive when it lets them go.
TEST_F(NeuronStoreTest, StartHandsOutWhatIsInMemoryWhileTheMissesAreRead) {
  testing::FaultyEnv env;
  auto s = Open(all_bytes() / 4, 0.5, &env);  // 32 hot records per layer, 32 cache slots
  ASSERT_NE(s, nullptr);
  const LayerBundles& lb = layout().layers[1];
  EXPECT_TRUE(AcquireAndCheck(*s, 1, {100, 101}).empty());  // now cached
  const uint64_t bad = lb.file_offset + 210 * lb.record_bytes;
  env.faults().Set(bad, bad + 1);
  env.faults().Hold();
  const std::vector<int32_t> ids = {150, 3, 100, 200, 101, 210, 7, 201};
  std::vector<const uint8_t*> recs(ids.size());
  s->Start(1, ids, recs.data());
  auto same = [&](size_t k) {
    return std::memcmp(recs[k], lb.records + ids[k] * lb.record_bytes, lb.record_bytes) == 0;
  };
  std::vector<int32_t> pending(s->pending().begin(), s->pending().end());
  std::sort(pending.begin(), pending.end());
  EXPECT_EQ(pending, (std::vector<int32_t>{0, 3, 5, 7}));         // 150 200 210 201
  while (env.faults().waiting() == 0) std::this_thread::yield();  // the I/O thread is held
  for (size_t k : {1, 2, 4, 6}) EXPECT_TRUE(same(k)) << "record " << ids[k] << " before the reads";
  env.faults().Unhold();
  std::vector<int32_t> landed;
  for (;;) {
    const std::span<const int32_t> got = s->Arrived(1);
    if (got.empty()) break;
    for (int32_t k : got) {
      EXPECT_TRUE(same(static_cast<size_t>(k))) << "record " << ids[k];
      landed.push_back(k);
    }
  }
  std::sort(landed.begin(), landed.end());
  EXPECT_EQ(landed, (std::vector<int32_t>{0, 3, 7}));
  std::vector<int32_t> failed;
  const Status st = s->Finish(&failed);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(failed, (std::vector<int32_t>{5}));
  s->Release();
  EXPECT_EQ(s->stats().cache.pinned, 0);
  env.faults().Clear();
  EXPECT_TRUE(AcquireAndCheck(*s, 1, ids).empty());
}

// The LRU part earns its share: steps whose misses outnumber its slots (it thrashes) hand its
// bytes to the hot segment; steps that reuse what it holds keep the split, and steps that would
// reuse it again take it back.
TEST_F(NeuronStoreTest, AThrashingCacheGivesItsBytesToTheHotSegment) {
  const int64_t n_layer = model_->config().n_layer;
  for (bool reuse : {true, false}) {
    SCOPED_TRACE(reuse ? "reused neurons" : "fresh neurons every step");
    auto s = Open(all_bytes() / 8, 0.5);  // 16 hot records and 16 cache slots per layer
    ASSERT_NE(s, nullptr);
    std::mt19937 rng(7);
    for (int token = 0; token < 20; ++token) {
      for (int32_t layer = 0; layer < n_layer; ++layer) {
        std::vector<int32_t> ids(64);
        std::iota(ids.begin(), ids.end(), reuse ? 100 : 16 + 3 * token % 150);
        if (reuse) ids.resize(12);
        std::shuffle(ids.begin(), ids.end(), rng);
        EXPECT_TRUE(AcquireAndCheck(*s, layer, ids).empty());
      }
    }
    const NeuronStoreStats st = s->stats();
    EXPECT_EQ(st.hot_share, reuse ? 0.5 : 1.0);
    EXPECT_LE(st.hot_bytes + st.cache.capacity * record_bytes(), all_bytes() / 8);
    if (reuse) continue;
    EXPECT_GT(st.hot_records, 16 * n_layer);  // growing toward 32 per layer
    // Steps that reuse a few neurons again: a ghost of the LRU would find them, so the LRU
    // gets its share back (a spell of thrashing is not forever).
    for (int token = 0; token < 32; ++token) {
      for (int32_t layer = 0; layer < n_layer; ++layer) {
        std::vector<int32_t> ids(12);
        std::iota(ids.begin(), ids.end(), 100);
        EXPECT_TRUE(AcquireAndCheck(*s, layer, ids).empty());
      }
    }
    const NeuronStoreStats back = s->stats();
    EXPECT_EQ(back.hot_share, 0.5);
    EXPECT_EQ(back.hot_records, 16 * n_layer) << "the hot segment gave the LRU's bytes back";
    EXPECT_GT(back.cache.capacity, 0);
    EXPECT_LE(back.hot_bytes + back.cache.capacity * record_bytes(), all_bytes() / 8);
  }
}

TEST_F(NeuronStoreTest, AnOrdinaryFileIsRefusedWithTheCommandToConvertIt) {
  auto plain = Model::Load(testing::ModelPath("stories260K.gguf"));
  ASSERT_TRUE(plain.ok());
  NeuronStoreOptions o;
  auto s = NeuronStore::Open(**plain, o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("sparrow convert"), std::string::npos);
  o.hot_share = 1.5;
  s = NeuronStore::Open(*model_, o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("hot share"), std::string::npos);
}

}  // namespace
}  // namespace sparrow
