#include "engine/kernels/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace sparrow::kernels {
namespace {

TEST(ThreadPoolTest, EveryTaskRunsExactlyOnceAcrossManyCalls) {
  for (int size : {1, 2, 3, 4}) {
    ThreadPool pool(size);
    EXPECT_EQ(pool.size(), size);
    for (int call = 0; call < 2000; ++call) {
      const int64_t n = (call * 37) % 101;  // includes 0, 1 and sizes below and above the pool
      std::vector<std::atomic<int>> hits(n);
      std::atomic<bool> bad_thread{false};
      pool.ParallelFor(n, [&](int64_t task, int thread) {
        hits[task].fetch_add(1, std::memory_order_relaxed);
        if (thread < 0 || thread >= size) bad_thread = true;
      });
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[i].load(), 1) << "size " << size << " call " << call;
      ASSERT_FALSE(bad_thread);
    }
  }
}

TEST(ThreadPoolTest, WritesOfTasksAreVisibleAfterReturn) {
  ThreadPool pool(3);
  std::vector<int64_t> out(10000);
  for (int round = 0; round < 50; ++round) {
    pool.ParallelFor(static_cast<int64_t>(out.size()), [&](int64_t i, int) { out[i] = i * round; });
    for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], static_cast<int64_t>(i) * round);
  }
}

TEST(ThreadPoolTest, SizeOneRunsInlineOnTheCaller) {
  ThreadPool pool(1);
  const auto caller = std::this_thread::get_id();
  bool inline_only = true;
  pool.ParallelFor(10, [&](int64_t, int thread) {
    inline_only &= (thread == 0 && std::this_thread::get_id() == caller);
  });
  EXPECT_TRUE(inline_only);
}

TEST(ThreadPoolTest, UsesTheWorkers) {
  ThreadPool pool(2);
  std::atomic<int> seen_worker{0};
  // Tasks wait a little so that the worker certainly picks some up.
  pool.ParallelFor(64, [&](int64_t, int thread) {
    if (thread == 1) seen_worker = 1;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  });
  EXPECT_EQ(seen_worker.load(), 1);
}

TEST(ThreadPoolTest, NestedCallsRunInline) {
  ThreadPool pool(2);
  std::vector<std::atomic<int>> hits(8 * 8);
  pool.ParallelFor(8, [&](int64_t outer, int outer_thread) {
    pool.ParallelFor(8, [&](int64_t inner, int inner_thread) {
      EXPECT_EQ(inner_thread, outer_thread);
      hits[outer * 8 + inner].fetch_add(1);
    });
  });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

TEST(ThreadPoolTest, ConcurrentCallersAreSerialized) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  auto caller = [&] {
    for (int i = 0; i < 300; ++i)
      pool.ParallelFor(17, [&](int64_t t, int) { total.fetch_add(t + 1); });
  };
  std::thread a(caller), b(caller);
  a.join();
  b.join();
  EXPECT_EQ(total.load(), 2 * 300 * (17 * 18 / 2));
}

TEST(ThreadPoolTest, WakesWorkersThatFellAsleep) {
  ThreadPool pool(3);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // past the spin phase
  std::atomic<int> count{0};
  pool.ParallelFor(100, [&](int64_t, int) { count.fetch_add(1); });
  EXPECT_EQ(count.load(), 100);
}

TEST(ThreadPoolTest, ThreadsLeftOutTakeNoTasksUntilLetBackIn) {
  ThreadPool pool(4);
  auto highest = [&] {
    std::atomic<int> top{-1}, count{0};
    for (int round = 0; round < 20; ++round) {
      pool.ParallelFor(64, [&](int64_t, int thread) {
        int seen = top.load();
        while (thread > seen && !top.compare_exchange_weak(seen, thread)) {
        }
        count.fetch_add(1);
      });
    }
    EXPECT_EQ(count.load(), 20 * 64);
    return top.load();
  };
  pool.set_active_threads(2);
  EXPECT_EQ(pool.active_threads(), 2);
  EXPECT_LE(highest(), 1);
  pool.set_active_threads(1);
  EXPECT_EQ(highest(), 0);
  pool.set_active_threads(99);  // clamped
  EXPECT_EQ(pool.active_threads(), 4);
  EXPECT_GE(highest(), 0);  // every thread may take part again; all tasks still run
  pool.set_active_threads(0);
  EXPECT_EQ(pool.active_threads(), 1);
}

TEST(ThreadPoolTest, CreateAndDestroyRepeatedly) {
  for (int i = 0; i < 50; ++i) {
    auto pool = std::make_unique<ThreadPool>(1 + i % 4);
    if (i % 2) pool->ParallelFor(5, [](int64_t, int) {});
  }
}

}  // namespace
}  // namespace sparrow::kernels
