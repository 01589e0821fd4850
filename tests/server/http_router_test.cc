#include "server/http/http_router.h"

#include <gtest/gtest.h>

namespace sparrow::server {
namespace {

TEST(HttpRouterTest, FindsRoutesAndTellsUnknownPathsFromWrongMethods) {
  const HttpRouter r = MakeSparrowRouter();
  auto health = r.Find(http::verb::get, "/health");
  ASSERT_NE(health.route, nullptr);
  EXPECT_EQ(health.route->scope, AuthScope::kOpen);
  auto completions = r.Find(http::verb::post, "/v1/completions");
  ASSERT_NE(completions.route, nullptr);
  EXPECT_EQ(completions.route->scope, AuthScope::kApiKey);

  auto wrong = r.Find(http::verb::get, "/v1/chat/completions");
  EXPECT_EQ(wrong.route, nullptr);
  EXPECT_EQ(wrong.error, http::status::method_not_allowed);
  EXPECT_EQ(wrong.allowed, "POST");

  EXPECT_EQ(r.Find(http::verb::get, "/v1/nothing").error, http::status::not_found);
  // A prefix route needs something after its slash.
  ASSERT_NE(r.Find(http::verb::get, "/v1/models/stories260K").route, nullptr);
  EXPECT_EQ(r.Find(http::verb::get, "/v1/models/").error, http::status::not_found);
  EXPECT_EQ(r.Find(http::verb::get, "/health/x").error, http::status::not_found);
  // Unless the route says it is exact: the dashboard's index and its files, all without a key.
  for (const char* path : {"/dashboard", "/dashboard/", "/dashboard/dashboard.js"}) {
    SCOPED_TRACE(path);
    auto d = r.Find(http::verb::get, path);
    ASSERT_NE(d.route, nullptr);
    EXPECT_EQ(d.route->scope, AuthScope::kOpen);
  }
}

TEST(HttpRouterTest, NewRoutesPlugInWithTheirScope) {
  HttpRouter r = MakeSparrowRouter();
  r.Add({http::verb::put, "/admin/budget", AuthScope::kApiKey,
         [](HttpExchange&) -> boost::asio::awaitable<bool> { co_return true; }});
  auto m = r.Find(http::verb::put, "/admin/budget");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.route->path, "/admin/budget");
  EXPECT_EQ(r.Find(http::verb::get, "/admin/budget").error, http::status::method_not_allowed);
}

}  // namespace
}  // namespace sparrow::server
