#pragma once
// JSON text as Python's json.dumps writes it (", " and ": " separators, or an indent), which is
// what Hugging Face chat templates produce with `tojson` and what models saw in training.
// Pure function, thread-safe.
#include <nlohmann/json.hpp>
#include <string>

namespace sparrow::server {

// Keys come in the value's order. `indent` < 0: one line with ", " and ": "; otherwise that many
// spaces per level.
std::string PyJson(const nlohmann::ordered_json& value, int indent = -1);

}  // namespace sparrow::server
