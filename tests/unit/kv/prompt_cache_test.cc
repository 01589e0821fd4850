// The prompt cache's file format and store on real files in a temp directory: XXH64 against the
// reference implementation's values, the header refusing each kind of wrong file by name, blocks
// surviving a new store (a restart), damaged and foreign files refused and deleted, the size
// limit evicting the least recently used, and a KvBlockPool reading a block back through it.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/kv/kv_block_pool.h"
#include "engine/kv/prompt_cache_file.h"
#include "engine/kv/prompt_cache_store.h"
#include "engine/kv/sequence_kv.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kLayers = 2, kDim = 64, kBlock = 4;

KvBlockFileIdentity Identity(const std::string& digest = "0123456789abcdef") {
  KvBlockFileIdentity id;
  id.model_digest = digest;
  id.types = kF16Kv;
  id.n_layer = kLayers;
  id.kv_dim = kDim;
  id.block_size = kBlock;
  id.block_bytes = KvBlockPool::BlockBytes(kLayers, kDim, kBlock, kF16Kv);
  return id;
}

std::vector<uint8_t> BlockOf(uint8_t tag, int64_t n) {
  std::vector<uint8_t> b(static_cast<size_t>(n));
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(tag * 31 + i * 7);
  return b;
}

// Values printed by xxHash's own XXH64 (xxhash.h 0.8) for the same inputs.
TEST(Xxh64Test, MatchesTheReference) {
  EXPECT_EQ(Xxh64("", 0), 0xef46db3751d8e999ull);
  EXPECT_EQ(Xxh64("abc", 3), 0x44bc2cf5ad770999ull);
  std::vector<uint8_t> b(1000);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 7 + 3);
  EXPECT_EQ(Xxh64(b.data(), 1), 0x1f25c8d0bc1f4bb6ull);
  EXPECT_EQ(Xxh64(b.data(), 5), 0xc7608efddb7051feull);
  EXPECT_EQ(Xxh64(b.data(), 31), 0xa2aa5f33cc4a6119ull);
  EXPECT_EQ(Xxh64(b.data(), 32), 0x23c3c17ef790fd97ull);
  EXPECT_EQ(Xxh64(b.data(), 33, 7), 0x97e8c13707136565ull);
  EXPECT_EQ(Xxh64(b.data(), 100), 0xa61f8d4c170fe531ull);
  EXPECT_EQ(Xxh64(b.data(), 1000, 7), 0xd08998cfe209c750ull);
}

TEST(KvBlockHeaderTest, RefusesEachWrongField) {
  const KvBlockFileIdentity id = Identity();
  const std::vector<uint8_t> payload = BlockOf(1, id.block_bytes);
  const uint64_t file_size = kKvBlockHeaderBytes + payload.size();
  const auto header = EncodeKvBlockHeader(id, 42, payload);
  Result<uint64_t> ok = CheckKvBlockHeader(header, id, 42, file_size);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(*ok, Xxh64(payload.data(), payload.size()));

  auto message = [&](const KvBlockFileIdentity& want, uint64_t hash, uint64_t size) {
    Result<uint64_t> r = CheckKvBlockHeader(header, want, hash, size);
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_EQ(message(Identity("fedcba9876543210"), 42, file_size),
            "written for model 0123456789abcdef, this model is fedcba9876543210");
  KvBlockFileIdentity q8 = id;
  q8.types = {TensorType::kQ8_0, TensorType::kQ8_0};
  EXPECT_EQ(message(q8, 42, file_size), "KV types f16/f16, this cache holds q8_0/q8_0");
  KvBlockFileIdentity wide = id;
  wide.kv_dim = 128;
  EXPECT_EQ(message(wide, 42, file_size), "kv_dim 64, expected 128");
  EXPECT_NE(message(id, 43, file_size).find("chain hash"), std::string::npos);
  EXPECT_NE(message(id, 42, file_size - 1).find("payload of"), std::string::npos);

  // Any changed header byte breaks its checksum; another version is named as such.
  for (size_t at : {size_t{20}, size_t{40}, size_t{80}, size_t{100}}) {
    auto bad = header;
    bad[at] ^= 0x10;
    Result<uint64_t> r = CheckKvBlockHeader(bad, id, 42, file_size);
    ASSERT_FALSE(r.ok()) << "byte " << at;
    EXPECT_EQ(r.status().code(), StatusCode::kCorrupt);
  }
  auto v2 = header;
  v2[8] = 2;
  EXPECT_EQ(CheckKvBlockHeader(v2, id, 42, file_size).status().message(),
            "format version 2, this build reads 1");
}

class PromptCacheStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<PromptCacheStore> Open(int64_t max_bytes = int64_t{1} << 30,
                                         const std::string& digest = "0123456789abcdef") {
    PromptCacheOptions o;
    o.dir = dir_;
    o.max_bytes = max_bytes;
    o.identity = Identity(digest);
    Result<std::unique_ptr<PromptCacheStore>> s = PromptCacheStore::Open(o);
    EXPECT_TRUE(s.ok()) << s.status().message();
    return s.ok() ? std::move(*s) : nullptr;
  }
  const std::string dir_ = testing::TempPath("prompt_cache");
  const int64_t bytes_ = Identity().block_bytes;
};

TEST_F(PromptCacheStoreTest, BlocksOutliveTheStore) {
  {
    auto store = Open();
    for (uint8_t t = 1; t <= 3; ++t) store->Save(100 + t, BlockOf(t, bytes_).data());
    store->Flush();
    EXPECT_EQ(store->stats().writes, 3);
  }
  auto store = Open();
  EXPECT_EQ(store->stats().files, 3);
  EXPECT_TRUE(store->Contains(102));
  EXPECT_FALSE(store->Contains(200));
  std::vector<uint8_t> got(static_cast<size_t>(bytes_));
  ASSERT_TRUE(store->Load(102, got.data()));
  EXPECT_EQ(got, BlockOf(2, bytes_));
  EXPECT_FALSE(store->Load(200, got.data()));
  EXPECT_EQ(store->stats().hits, 1);
}

TEST_F(PromptCacheStoreTest, RefusesDamagedAndForeignFiles) {
  std::string path;
  {
    auto store = Open();
    store->Save(7, BlockOf(7, bytes_).data());
    store->Save(8, BlockOf(8, bytes_).data());
    store->Flush();
    path = store->PathOf(7);
  }
  {  // one flipped bit in the payload
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(kKvBlockHeaderBytes + 100));
    f.put('\x5a');
  }
  auto store = Open();
  std::vector<uint8_t> got(static_cast<size_t>(bytes_), 0);
  EXPECT_FALSE(store->Load(7, got.data()));
  EXPECT_EQ(store->stats().refused, 1);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(store->Contains(7));

  // Another model's file put where this model looks is refused too.
  std::string foreign;
  {
    auto other = Open(int64_t{1} << 30, "fedcba9876543210");
    other->Save(9, BlockOf(9, bytes_).data());
    other->Flush();
    foreign = other->PathOf(9);
  }
  fs::copy_file(foreign, store->PathOf(8), fs::copy_options::overwrite_existing);
  EXPECT_FALSE(store->Load(8, got.data()));
  EXPECT_EQ(store->stats().refused, 2);
  // The other model's own copy is untouched and still its own.
  auto other = Open(int64_t{1} << 30, "fedcba9876543210");
  EXPECT_TRUE(other->Load(9, got.data()));
  EXPECT_EQ(got, BlockOf(9, bytes_));
}

TEST_F(PromptCacheStoreTest, EvictsTheLeastRecentlyUsed) {
  const int64_t file = static_cast<int64_t>(kKvBlockHeaderBytes) + bytes_;
  auto store = Open(2 * file);
  std::vector<uint8_t> got(static_cast<size_t>(bytes_));
  store->Save(1, BlockOf(1, bytes_).data());
  store->Save(2, BlockOf(2, bytes_).data());
  store->Flush();
  ASSERT_TRUE(store->Load(1, got.data()));  // 2 is now the least recently used
  store->Save(3, BlockOf(3, bytes_).data());
  store->Flush();
  EXPECT_TRUE(store->Contains(1));
  EXPECT_FALSE(store->Contains(2));
  EXPECT_TRUE(store->Contains(3));
  EXPECT_FALSE(fs::exists(store->PathOf(2)));
  EXPECT_EQ(store->stats().evicted, 1);
  EXPECT_EQ(store->stats().bytes, 2 * file);
}

// A pool publishing a prefix, then a new pool (a restart) finding it through the tier.
TEST_F(PromptCacheStoreTest, APoolReadsPublishedBlocksBack) {
  const std::vector<int32_t> tokens = {5, 6, 7, 8, 9, 10, 11, 12, 13};
  std::vector<uint8_t> first_block;
  {
    auto store = Open();
    KvBlockPool pool(kLayers, kDim, kBlock, 8, kF16Kv);
    pool.SetTier(store.get());
    SequenceKv seq(&pool);
    ASSERT_TRUE(seq.Reserve(9));
    for (int64_t p = 0; p < 9; ++p) {
      for (int64_t l = 0; l < kLayers; ++l) {
        std::memset(seq.KeyRow(l, p), static_cast<int>(p + 1), KvRowBytes(TensorType::kF16, kDim));
        std::memset(seq.ValueRow(l, p), static_cast<int>(p + 50),
                    KvRowBytes(TensorType::kF16, kDim));
      }
    }
    seq.PublishFullBlocks(tokens, 9);  // two full blocks
    const auto* slot = seq.KeyRow(0, 0);
    first_block.assign(slot, slot + bytes_);
    seq.ReleaseAll();
    pool.SetTier(nullptr);
    store->Flush();
    EXPECT_EQ(store->stats().writes, 2);
  }
  auto store = Open();
  KvBlockPool pool(kLayers, kDim, kBlock, 8, kF16Kv);
  pool.SetTier(store.get());
  SequenceKv seq(&pool);
  EXPECT_EQ(seq.AttachPrefix(tokens, 8), 8);
  EXPECT_EQ(pool.Stats().tier_hits, 2);
  EXPECT_EQ(pool.Stats().prefix_hits, 2);
  const auto* slot = seq.KeyRow(0, 0);
  EXPECT_EQ(std::vector<uint8_t>(slot, slot + bytes_), first_block);
  EXPECT_EQ(seq.KeyRow(1, 7)[0], 8);
  EXPECT_EQ(seq.ValueRow(0, 5)[0], 55);
  // Blocks read back are in memory now: a second sequence finds them there, not on flash.
  SequenceKv again(&pool);
  EXPECT_EQ(again.AttachPrefix(tokens, 8), 8);
  EXPECT_EQ(pool.Stats().tier_hits, 2);
  EXPECT_EQ(store->stats().hits, 2);
}

}  // namespace
}  // namespace sparrow
