#include "server/http/http_status.h"

namespace sparrow::server {

boost::beast::http::status HttpStatusFor(StatusCode code) {
  using boost::beast::http::status;
  switch (code) {
    case StatusCode::kOk:
      return status::ok;
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kUnsupported:
      return status::bad_request;
    case StatusCode::kNotFound:
      return status::not_found;
    case StatusCode::kResourceExhausted:
      return status::too_many_requests;
    case StatusCode::kCancelled:
    case StatusCode::kUnavailable:
      return status::service_unavailable;
    case StatusCode::kCorrupt:
    case StatusCode::kIoError:
    case StatusCode::kInternal:
      return status::internal_server_error;
  }
  return status::internal_server_error;
}

}  // namespace sparrow::server
