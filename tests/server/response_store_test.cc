// ResponseStore: the count and byte bounds (least recently used out first), the expiry on an
// injected clock, and a response too large for the whole store.
#include "server/core/response_store.h"

#include <gtest/gtest.h>

namespace sparrow::server {
namespace {

StoredResponse Text(size_t bytes) {
  return {std::string(bytes, 'r'), "[]"};
}

TEST(ResponseStoreTest, KeepsGetsAndErases) {
  ResponseStore store;
  EXPECT_TRUE(store.Put("a", {"{\"id\":\"a\"}", "[1]"}));
  auto got = store.Get("a");
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->response, "{\"id\":\"a\"}");
  EXPECT_EQ(got->conversation, "[1]");
  EXPECT_EQ(store.Get("b"), nullptr);
  EXPECT_TRUE(store.Erase("a"));
  EXPECT_FALSE(store.Erase("a"));
  EXPECT_EQ(store.Get("a"), nullptr);
  EXPECT_EQ(store.stats().entries, 0u);
  EXPECT_EQ(store.stats().bytes, 0u);
}

TEST(ResponseStoreTest, CountBoundEvictsTheLeastRecentlyUsed) {
  ResponseStoreOptions o;
  o.max_entries = 2;
  ResponseStore store(o);
  store.Put("a", Text(10));
  store.Put("b", Text(10));
  ASSERT_NE(store.Get("a"), nullptr);  // b is now the least recently used
  store.Put("c", Text(10));
  EXPECT_NE(store.Get("a"), nullptr);
  EXPECT_EQ(store.Get("b"), nullptr);
  EXPECT_NE(store.Get("c"), nullptr);
  EXPECT_EQ(store.stats().entries, 2u);
  EXPECT_EQ(store.stats().evicted, 1u);
  // The same id again replaces the entry, it does not add one.
  store.Put("c", Text(20));
  EXPECT_EQ(store.stats().entries, 2u);
  EXPECT_EQ(store.Get("c")->response.size(), 20u);
}

TEST(ResponseStoreTest, ByteBoundHoldsAndTooLargeIsNotKept) {
  ResponseStoreOptions o;
  o.max_bytes = 3000;
  ResponseStore store(o);
  for (const char* id : {"a", "b", "c"}) EXPECT_TRUE(store.Put(id, Text(1000)));
  EXPECT_LE(store.stats().bytes, o.max_bytes);
  EXPECT_EQ(store.Get("a"), nullptr);  // three do not fit with their overhead: the oldest left
  EXPECT_NE(store.Get("c"), nullptr);
  EXPECT_FALSE(store.Put("huge", Text(3000)));
  EXPECT_EQ(store.Get("huge"), nullptr);
  EXPECT_NE(store.Get("c"), nullptr);  // nothing was evicted for it
}

TEST(ResponseStoreTest, EntriesExpire) {
  auto now = std::chrono::steady_clock::time_point{};
  ResponseStoreOptions o;
  o.ttl = std::chrono::seconds(60);
  o.now = [&now] { return now; };
  ResponseStore store(o);
  store.Put("a", Text(10));
  now += std::chrono::seconds(30);
  store.Put("b", Text(10));
  ASSERT_NE(store.Get("a"), nullptr);  // use does not extend the expiry
  now += std::chrono::seconds(31);
  EXPECT_EQ(store.Get("a"), nullptr);
  EXPECT_NE(store.Get("b"), nullptr);
  now += std::chrono::seconds(30);
  EXPECT_FALSE(store.Erase("b"));
  EXPECT_EQ(store.stats().expired, 2u);
  EXPECT_EQ(store.stats().entries, 0u);
}

}  // namespace
}  // namespace sparrow::server
