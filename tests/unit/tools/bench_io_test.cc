// The flash read probe: one row per block size, with its reads counted, on a real file; refused
// on a file smaller than its largest block, naming the file.
#include "engine/tools/bench_io.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "tests/util/test_paths.h"

namespace sparrow::tools {
namespace {

TEST(IoBench, ReadsEachBlockSizeAndReportsIt) {
  const std::string path = testing::TempPath("io-probe.bin");
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    const std::vector<char> mib(1 << 20, 'x');
    for (int i = 0; i < 4; ++i) ASSERT_EQ(std::fwrite(mib.data(), 1, mib.size(), f), mib.size());
    std::fclose(f);
  }
  IoBenchOptions o;
  o.path = path;
  o.block_bytes = {4096, 65536};
  o.queue_depths = {1, 8};
  o.bytes_per_size = 1 << 20;
  auto r = RunIoBench(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->file_bytes, 4u << 20);
  ASSERT_EQ(r->rows.size(), 4u);  // each depth, each block size
  EXPECT_EQ(r->rows[0].reads, 256);
  EXPECT_EQ(r->rows[1].reads, 16);
  EXPECT_EQ(r->rows[2].reads, 256);
  EXPECT_EQ(r->rows[3].reads, 64);  // at least 8 batches of 8
  EXPECT_EQ(r->rows[0].backend, "pread");
  EXPECT_EQ(r->rows[2].queue_depth, 8);
  for (const IoBenchRow& row : r->rows) {
    EXPECT_GT(row.mib_per_s, 0);
    EXPECT_LE(row.p50_us, row.p99_us);
  }
  EXPECT_NE(IoBenchTable(*r).find("| 64 KiB | 1 | pread | 16 |"), std::string::npos);
  EXPECT_NE(IoBenchJson(*r).find("\"block_bytes\":4096"), std::string::npos);

  o.block_bytes = {8u << 20};
  auto small = RunIoBench(o);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find(path), std::string::npos);
  o.block_bytes = {1000};
  EXPECT_FALSE(RunIoBench(o).ok());
}

}  // namespace
}  // namespace sparrow::tools
