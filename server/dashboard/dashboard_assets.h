#pragma once
// The web dashboard's files (server/dashboard/web), compiled into sparrowd so that it serves
// them with nothing installed beside it and nothing fetched from elsewhere.
#include <cstddef>
#include <string_view>

namespace sparrow::server {

struct DashboardAsset {
  const char* name;          // "index.html"
  const char* content_type;  // "text/html; charset=utf-8"
  const unsigned char* data;
  std::size_t size;
};

// The file `name` (relative to the dashboard's root), or null.
const DashboardAsset* FindDashboardAsset(std::string_view name);

}  // namespace sparrow::server
