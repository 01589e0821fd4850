// BundleReader and the Env seam: records read from a converted file equal the mapped ones, by
// O_DIRECT (where the file system has it) and buffered reads; adjacent records coalesce into one
// read, capped; an injected I/O error fails only the records of its read and names the file and
// offset; a file cut short fails the records past its end.
#include "engine/sparse/bundle_reader.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include "engine/model/model.h"
#include "tests/util/converted_model.h"
#include "tests/util/fault_env.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

class BundleReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = testing::WriteConvertedSyntheticModel("reader", TensorType::kF16);
    auto m = Model::Load(path_);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value();
    ASSERT_NE(model_->weights().bundles, nullptr);
  }

  const NeuronBundleLayout& layout() const { return *model_->weights().bundles; }

  // Reads `ids` of layer 1 and checks each delivered record against the mapped file.
  std::vector<int32_t> ReadAndCheck(BundleReader& r, const std::vector<int32_t>& ids,
                                    Status* status = nullptr) {
    const LayerBundles& lb = layout().layers[1];
    std::vector<std::vector<uint8_t>> bufs(ids.size(), std::vector<uint8_t>(lb.record_bytes));
    std::vector<uint8_t*> dst;
    for (auto& b : bufs) dst.push_back(b.data());
    std::vector<int32_t> failed;
    const Status st = r.Read(1, ids, dst.data(), &failed);
    if (status) *status = st;
    const std::set<int32_t> bad(failed.begin(), failed.end());
    for (size_t k = 0; k < ids.size(); ++k) {
      if (bad.count(static_cast<int32_t>(k))) continue;
      EXPECT_EQ(std::memcmp(bufs[k].data(), lb.records + ids[k] * lb.record_bytes, lb.record_bytes),
                0)
          << "record " << ids[k];
    }
    return failed;
  }

  std::string path_;
  std::unique_ptr<Model> model_;
};

TEST_F(BundleReaderTest, DirectAndBufferedReadsDeliverTheRecordsInRuns) {
  for (bool direct : {true, false}) {
    SCOPED_TRACE(direct ? "O_DIRECT asked" : "buffered");
    auto f = Env::Default()->OpenRandomAccess(path_, direct);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    if (direct && !(*f)->direct()) {
      std::printf("[note] %s: the file system refuses O_DIRECT; reads are buffered\n",
                  path_.c_str());
    }
    EXPECT_EQ((*f)->size() % 4096, 0u);  // converted files end on a whole block
    BundleReader r(layout(), std::move(f).value());
    EXPECT_TRUE(ReadAndCheck(r, {5, 3, 4, 100, 255, 0}).empty());
    const BundleReadStats s = r.stats();
    EXPECT_EQ(s.reads, 4);  // {0} {3 4 5} {100} {255}
    EXPECT_EQ(s.records, 6);
    EXPECT_EQ(s.failed_reads, 0);
    int64_t timed = 0;
    for (int64_t c : s.latency) timed += c;
    EXPECT_EQ(timed, 4);
  }
}

// Reads issued together through io_uring (queue depth 16) deliver what one pread at a time
// delivers; injected failures fail only their records on that path too.
TEST_F(BundleReaderTest, IoUringBatchesDeliverTheSameRecords) {
  auto f = Env::Default()->OpenRandomAccess(path_, FileOptions{true, 16});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
#ifdef SPARROW_HAVE_LIBURING
  EXPECT_EQ((*f)->read_backend(), "io_uring");
#else
  std::printf("[note] built without liburing: batches are read one pread at a time\n");
#endif
  BundleReader r(layout(), std::move(f).value());
  std::vector<int32_t> ids;
  for (int32_t i = 0; i < 256; i += 3) ids.push_back(i);  // 86 separate reads
  EXPECT_TRUE(ReadAndCheck(r, ids).empty());
  EXPECT_EQ(r.stats().reads, 86);
  EXPECT_EQ(r.stats().records, 86);

  const LayerBundles& lb = layout().layers[1];
  const uint64_t bad = lb.file_offset + 30 * lb.record_bytes;
  auto g = Env::Default()->OpenRandomAccess(path_, FileOptions{true, 16});
  ASSERT_TRUE(g.ok());
  auto range = std::make_shared<testing::FaultRange>();
  range->Set(bad, bad + 1);
  BundleReader faulty(layout(), std::make_unique<testing::FaultyFile>(std::move(g).value(), range));
  Status st;
  // Records of 512 bytes: 24, 27 and 30 are read through the same 4096-byte block.
  std::vector<int32_t> failed = ReadAndCheck(faulty, ids, &st);
  std::sort(failed.begin(), failed.end());
  EXPECT_EQ(failed, (std::vector<int32_t>{8, 9, 10}));
  EXPECT_NE(st.message().find("injected"), std::string::npos);
}

TEST_F(BundleReaderTest, LongRunsAreSplitAtTheReadCap) {
  auto f = Env::Default()->OpenRandomAccess(path_, true);
  ASSERT_TRUE(f.ok());
  const uint64_t rec = layout().layers[1].record_bytes;
  BundleReader r(layout(), std::move(f).value(), Env::Default(), 2 * rec);
  std::vector<int32_t> ids(10);
  for (int32_t i = 0; i < 10; ++i) ids[i] = 20 + i;
  EXPECT_TRUE(ReadAndCheck(r, ids).empty());
  EXPECT_EQ(r.stats().reads, 5);
}

TEST_F(BundleReaderTest, AFailedReadFailsOnlyItsRecords) {
  const LayerBundles& lb = layout().layers[1];
  const uint64_t bad = lb.file_offset + 40 * lb.record_bytes;  // inside record 40
  auto f = Env::Default()->OpenRandomAccess(path_, false);
  ASSERT_TRUE(f.ok());
  auto range = std::make_shared<testing::FaultRange>();
  range->Set(bad + 1, bad + 2);
  BundleReader r(layout(), std::make_unique<testing::FaultyFile>(std::move(f).value(), range));
  Status st;
  const std::vector<int32_t> ids = {10, 39, 40, 41, 90};
  std::vector<int32_t> failed = ReadAndCheck(r, ids, &st);
  std::sort(failed.begin(), failed.end());
  EXPECT_EQ(failed, (std::vector<int32_t>{1, 2, 3}));  // the run 39 40 41
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(path_), std::string::npos);
  EXPECT_NE(st.message().find("offset"), std::string::npos);
  EXPECT_EQ(r.stats().failed_reads, 1);
  EXPECT_EQ(r.stats().records, 2);
}

TEST_F(BundleReaderTest, AFileCutShortFailsTheRecordsPastItsEnd) {
  const std::string cut = testing::TempPath("reader-cut.gguf");
  std::filesystem::copy_file(path_, cut, std::filesystem::copy_options::overwrite_existing);
  const LayerBundles& lb = layout().layers[1];
  std::filesystem::resize_file(cut, lb.file_offset + 200 * lb.record_bytes);
  for (bool direct : {true, false}) {
    auto f = Env::Default()->OpenRandomAccess(cut, direct);
    ASSERT_TRUE(f.ok());
    BundleReader r(layout(), std::move(f).value());
    Status st;
    const std::vector<int32_t> failed = ReadAndCheck(r, {7, 250}, &st);
    EXPECT_EQ(failed, (std::vector<int32_t>{1}));
    EXPECT_NE(st.message().find("past the end"), std::string::npos) << st.ToString();
  }
  auto missing = Env::Default()->OpenRandomAccess(cut + ".absent", true);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(".absent"), std::string::npos);
}

}  // namespace
}  // namespace sparrow
