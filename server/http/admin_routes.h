#pragma once
// The admin API over HTTP, under /admin/v1/ (AuthScope::kAdmin: the admin key): status, the
// request list and cancel, drain and resume, the log level, and the event stream (SSE). The
// work is done by the AdminController in ctx.admin; these routes parse and render. JSON in
// and out, errors in the OpenAI shape. server/README.md, "Remote control", documents them.
#include "server/http/http_router.h"

namespace sparrow::server {

void AddAdminRoutes(HttpRouter& router);

}  // namespace sparrow::server
