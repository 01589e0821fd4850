#include "server/chat/py_json.h"

namespace sparrow::server {
namespace {

using json = nlohmann::ordered_json;

void Write(const json& v, int indent, int depth, std::string* out) {
  const bool multiline = indent >= 0;
  auto newline = [&](int d) {
    if (!multiline) return;
    *out += '\n';
    out->append(static_cast<size_t>(indent * d), ' ');
  };
  if (v.is_object() && !v.empty()) {
    *out += '{';
    bool first = true;
    for (const auto& [key, item] : v.items()) {
      if (!first) *out += multiline ? "," : ", ";
      first = false;
      newline(depth + 1);
      *out += json(key).dump(-1, ' ', false, json::error_handler_t::replace);
      *out += ": ";
      Write(item, indent, depth + 1, out);
    }
    newline(depth);
    *out += '}';
  } else if (v.is_array() && !v.empty()) {
    *out += '[';
    bool first = true;
    for (const auto& item : v) {
      if (!first) *out += multiline ? "," : ", ";
      first = false;
      newline(depth + 1);
      Write(item, indent, depth + 1, out);
    }
    newline(depth);
    *out += ']';
  } else {
    *out += v.dump(-1, ' ', false, json::error_handler_t::replace);
  }
}

}  // namespace

std::string PyJson(const json& value, int indent) {
  std::string out;
  Write(value, indent, 0, &out);
  return out;
}

}  // namespace sparrow::server
