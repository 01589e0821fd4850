#pragma once
// Translation of sparrow::Status into the gRPC status a client sees.
#include <grpcpp/support/status.h>

#include "engine/common/status.h"

namespace sparrow::server {

// Maps the code (InvalidArgument -> INVALID_ARGUMENT, ResourceExhausted -> RESOURCE_EXHAUSTED,
// NotFound -> NOT_FOUND, ...) and keeps the message.
grpc::Status ToGrpcStatus(const Status& status);

}  // namespace sparrow::server

namespace sparrow::server {

// "OK", "INVALID_ARGUMENT", ... as metrics label values.
const char* GrpcCodeName(grpc::StatusCode code);

}  // namespace sparrow::server
