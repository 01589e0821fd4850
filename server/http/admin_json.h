#pragma once
// AdminJson: an admin.proto message (server/admin's answers) as the JSON the HTTP admin routes
// send. protobuf's JSON printer with the proto field names and every field with no presence
// printed, then two fixes where proto3's JSON mapping differs from what the routes have always
// sent (and the dashboard and scripts read): 64-bit integers as numbers, not strings, and the
// few optional fields that older clients read as null when unset. Pure functions.
#include <google/protobuf/message.h>

#include <nlohmann/json.hpp>

#include "sparrow/admin/v1/admin.pb.h"

namespace sparrow::server {

nlohmann::json AdminJson(const google::protobuf::Message& m);

// An action event as the event stream sends it: its arguments as a JSON object ("args"), not
// the text the proto carries (args_json).
nlohmann::json ActionEventJson(const ::sparrow::admin::v1::ActionEvent& e);

}  // namespace sparrow::server
