#pragma once
// The web dashboard's routes: GET /dashboard/ and its files, with no key (the page holds no
// data; it asks for the admin key and calls the admin API with it). /dashboard redirects.
#include "server/http/http_router.h"

namespace sparrow::server {

void AddDashboardRoutes(HttpRouter& router);

}  // namespace sparrow::server
