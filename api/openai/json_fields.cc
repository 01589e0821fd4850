#include "api/openai/json_fields.h"

#include <cmath>

namespace sparrow::openai {

using json = nlohmann::json;

// Records the failing field for the caller and builds the status.
Status Bad(std::string* param, const std::string& field, const std::string& what) {
  if (param) *param = field;
  return InvalidArgument("'" + field + "' " + what);
}

const json* Member(const json& o, const char* key) {
  auto it = o.find(key);
  return it == o.end() || it->is_null() ? nullptr : &*it;
}

Status Number(const json& b, const char* key, double lo, double hi, float* out, std::string* param,
              const std::string& prefix) {
  auto it = b.find(key);
  if (it == b.end() || it->is_null()) return Status::Ok();
  if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < lo ||
      it->get<double>() > hi) {
    char buf[128];
    std::snprintf(buf, sizeof(buf), "must be a number between %g and %g", lo, hi);
    return Bad(param, prefix + key, buf);
  }
  *out = static_cast<float>(it->get<double>());
  return Status::Ok();
}

Status Integer(const json& b, const char* key, int64_t lo, int64_t hi, std::optional<int64_t>* out,
               std::string* param, const std::string& prefix) {
  auto it = b.find(key);
  if (it == b.end() || it->is_null()) return Status::Ok();
  if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > hi) {
    return Bad(param, prefix + key,
               "must be an integer between " + std::to_string(lo) + " and " + std::to_string(hi));
  }
  *out = it->get<int64_t>();
  return Status::Ok();
}

Status Bool(const json& b, const char* key, bool* out, std::string* param,
            const std::string& prefix) {
  auto it = b.find(key);
  if (it == b.end() || it->is_null()) return Status::Ok();
  if (!it->is_boolean()) return Bad(param, prefix + key, "must be true or false");
  *out = it->get<bool>();
  return Status::Ok();
}

Status String(const json& b, const char* key, std::string* out, std::string* param,
              const std::string& prefix) {
  auto it = b.find(key);
  if (it == b.end() || it->is_null()) return Status::Ok();
  if (!it->is_string()) return Bad(param, prefix + key, "must be a string");
  *out = it->get<std::string>();
  return Status::Ok();
}

}  // namespace sparrow::openai
