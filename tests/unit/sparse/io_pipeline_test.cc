// The pieces of the I/O–compute pipeline: IoThread runs jobs in order on one thread;
// RecordArrivals hands a consumer every landed record exactly once, as they land, and keeps
// failures apart.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <set>
#include <thread>
#include <vector>

#include "engine/sparse/io_thread.h"
#include "engine/sparse/record_arrivals.h"

namespace sparrow {
namespace {

TEST(IoThreadTest, JobsRunInOrderOnOneThreadAndRunWaits) {
  std::vector<int> order;
  std::set<std::thread::id> threads;
  {
    IoThread io;
    for (int i = 0; i < 100; ++i) {
      io.Post([&, i] {
        order.push_back(i);
        threads.insert(std::this_thread::get_id());
      });
    }
    int seen = -1;
    io.Run([&] { seen = static_cast<int>(order.size()); });
    EXPECT_EQ(seen, 100) << "Run runs after every job posted before it";
    // A Run from inside a job runs inline instead of waiting for itself.
    bool nested = false;
    io.Run([&] { io.Run([&] { nested = true; }); });
    EXPECT_TRUE(nested);
    for (int i = 100; i < 110; ++i) io.Post([&, i] { order.push_back(i); });
  }  // the destructor runs what is still queued
  std::vector<int> want(110);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(order, want);
  EXPECT_EQ(threads.size(), 1u);
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);
}

TEST(RecordArrivalsTest, EveryLandedRecordIsHandedOutOnceAndFailuresApart) {
  RecordArrivals arrivals;
  for (int round = 0; round < 20; ++round) {
    const size_t n = 300 + static_cast<size_t>(round);
    arrivals.Reset(n);
    std::atomic<bool> go{false};
    // The producer delivers runs of 1..7 records; every 5th run fails.
    std::thread producer([&] {
      while (!go) std::this_thread::yield();
      int32_t next = 0;
      for (int run = 0; next < static_cast<int32_t>(n); ++run) {
        const int32_t len = std::min<int32_t>(1 + run % 7, static_cast<int32_t>(n) - next);
        std::vector<int32_t> ks(static_cast<size_t>(len));
        std::iota(ks.begin(), ks.end(), next);
        arrivals.Push(ks.data(), ks.size(), run % 5 != 4);
        next += len;
      }
      arrivals.Close();
    });
    go = true;
    std::vector<int32_t> landed;
    for (;;) {
      const std::span<const int32_t> got = arrivals.Take(16);
      if (got.empty()) break;
      landed.insert(landed.end(), got.begin(), got.end());
    }
    arrivals.WaitClosed();
    producer.join();
    std::vector<int32_t> failed(arrivals.failed().begin(), arrivals.failed().end());
    EXPECT_EQ(landed.size() + failed.size(), n);
    std::vector<int32_t> all = landed;
    all.insert(all.end(), failed.begin(), failed.end());
    std::sort(all.begin(), all.end());
    std::vector<int32_t> want(n);
    std::iota(want.begin(), want.end(), 0);
    EXPECT_EQ(all, want) << "each record once, landed or failed";
    EXPECT_TRUE(std::is_sorted(landed.begin(), landed.end())) << "in the order they landed";
    EXPECT_FALSE(failed.empty());
    EXPECT_TRUE(arrivals.Take(1).empty());
  }
}

TEST(RecordArrivalsTest, ARoundOfFailuresOnlyEndsWithNothingLanded) {
  RecordArrivals arrivals;
  arrivals.Reset(3);
  std::thread producer([&] {
    const int32_t ks[] = {0, 1, 2};
    arrivals.Push(ks, 1, false);
    arrivals.Push(ks + 1, 2, false);
    arrivals.Close();
  });
  EXPECT_TRUE(arrivals.Take(1).empty()) << "a failure is not handed out as landed";
  arrivals.WaitClosed();
  producer.join();
  EXPECT_EQ(arrivals.failed().size(), 3u);
  // An empty round is over at once.
  arrivals.Reset(0);
  arrivals.Close();
  EXPECT_TRUE(arrivals.Take(8).empty());
}

}  // namespace
}  // namespace sparrow
