#include "api/ollama/ollama_options.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "api/openai/json_fields.h"

namespace sparrow::ollama {
namespace {

using json = nlohmann::json;
using openai::Bad;
using openai::Member;

constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();

// An integer option that may be -1 (or -2) for "no limit"; `*out` unset then.
Status Limit(const json& o, const char* key, int64_t lowest, std::optional<int64_t>* out,
             std::string* param) {
  std::optional<int64_t> v;
  SPARROW_RETURN_IF_ERROR(openai::Integer(o, key, lowest, kMaxInt, &v, param, "options."));
  if (v && *v >= 0) *out = v;
  return Status::Ok();
}

Status Int32(const json& o, const char* key, int64_t lo, int64_t hi, int32_t* out,
             std::string* param) {
  std::optional<int64_t> v;
  SPARROW_RETURN_IF_ERROR(openai::Integer(o, key, lo, hi, &v, param, "options."));
  if (v) *out = static_cast<int32_t>(*v);
  return Status::Ok();
}

Status Stop(const json& o, std::vector<std::string>* out, std::string* param) {
  const json* stop = Member(o, "stop");
  if (stop == nullptr) return Status::Ok();
  if (stop->is_string()) {
    out->push_back(stop->get<std::string>());
    return Status::Ok();
  }
  if (!stop->is_array()) return Bad(param, "options.stop", "must be a string or a list of strings");
  for (const json& s : *stop) {
    if (!s.is_string()) return Bad(param, "options.stop", "must be a string or a list of strings");
    out->push_back(s.get<std::string>());
  }
  return Status::Ok();
}

}  // namespace

Status ParseOptions(const json& body, Options* out, std::string* param) {
  const json* o = Member(body, "options");
  if (o == nullptr) return Status::Ok();
  if (!o->is_object()) return Bad(param, "options", "must be an object");
  const std::string p = "options.";
  SPARROW_RETURN_IF_ERROR(openai::Number(*o, "temperature", 0, 100, &out->temperature, param, p));
  SPARROW_RETURN_IF_ERROR(Int32(*o, "top_k", 0, 1 << 20, &out->top_k, param));
  SPARROW_RETURN_IF_ERROR(openai::Number(*o, "top_p", 0, 1, &out->top_p, param, p));
  if (out->top_p <= 0) out->top_p = 1.0f;  // 0 means off, as llama.cpp reads it
  SPARROW_RETURN_IF_ERROR(openai::Number(*o, "min_p", 0, 1, &out->min_p, param, p));
  SPARROW_RETURN_IF_ERROR(
      openai::Number(*o, "repeat_penalty", 0, 100, &out->repeat_penalty, param, p));
  if (out->repeat_penalty <= 0) out->repeat_penalty = 1.0f;  // 0: off
  SPARROW_RETURN_IF_ERROR(Int32(*o, "repeat_last_n", -1, 1 << 20, &out->repeat_last_n, param));
  if (out->repeat_last_n == -1) {
    out->repeat_last_n_context = true;
    out->repeat_last_n = 64;
  }
  SPARROW_RETURN_IF_ERROR(
      openai::Number(*o, "presence_penalty", -2, 2, &out->presence_penalty, param, p));
  SPARROW_RETURN_IF_ERROR(
      openai::Number(*o, "frequency_penalty", -2, 2, &out->frequency_penalty, param, p));
  std::optional<int64_t> seed;
  SPARROW_RETURN_IF_ERROR(Limit(*o, "seed", -1, &seed, param));
  if (seed) out->seed = static_cast<uint64_t>(*seed);
  SPARROW_RETURN_IF_ERROR(Limit(*o, "num_predict", -2, &out->num_predict, param));
  if (out->num_predict && *out->num_predict == 0) {
    return Bad(param, "options.num_predict", "must be at least 1 (or -1 for no limit)");
  }
  SPARROW_RETURN_IF_ERROR(Stop(*o, &out->stop, param));
  std::optional<int64_t> num_ctx;
  SPARROW_RETURN_IF_ERROR(openai::Integer(*o, "num_ctx", 1, kMaxInt, &num_ctx, param, p));
  out->num_ctx = num_ctx;
  return Status::Ok();
}

Status ParseFormat(const json& body, Format* out, std::string* param) {
  const json* f = Member(body, "format");
  if (f == nullptr) return Status::Ok();
  if (f->is_string()) {
    const std::string s = f->get<std::string>();
    if (s.empty()) return Status::Ok();
    if (s == "json") {
      out->kind = Format::Kind::kJson;
      return Status::Ok();
    }
    return Bad(param, "format", "must be \"json\" or a JSON schema object; got '" + s + "'");
  }
  if (!f->is_object()) return Bad(param, "format", "must be \"json\" or a JSON schema object");
  out->kind = Format::Kind::kSchema;
  out->schema = f->dump();
  return Status::Ok();
}

bool ParseGoDuration(const std::string& text, double* seconds) {
  if (text.empty()) return false;
  // A bare number is seconds (Ollama reads "300" so).
  char* end = nullptr;
  const double plain = std::strtod(text.c_str(), &end);
  if (end == text.c_str() + text.size() && std::isfinite(plain)) {
    *seconds = plain;
    return true;
  }
  size_t i = 0;
  double sign = 1;
  if (text[0] == '-' || text[0] == '+') {
    sign = text[0] == '-' ? -1 : 1;
    i = 1;
  }
  if (text.substr(i) == "0") {
    *seconds = 0;
    return true;
  }
  double total = 0;
  bool any = false;
  while (i < text.size()) {
    // The number: digits with at most one '.', as Go writes it (no exponent, no hex).
    size_t num_end = i;
    while (num_end < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[num_end])) || text[num_end] == '.')) {
      ++num_end;
    }
    const std::string number = text.substr(i, num_end - i);
    if (number.empty() || number == "." || number.find('.') != number.rfind('.')) return false;
    const double v = std::strtod(number.c_str(), nullptr);
    i = num_end;
    size_t unit_end = i;
    while (unit_end < text.size() && (std::isalpha(static_cast<unsigned char>(text[unit_end])) ||
                                      static_cast<unsigned char>(text[unit_end]) >= 0x80)) {
      ++unit_end;
    }
    const std::string unit = text.substr(i, unit_end - i);
    double scale = 0;
    if (unit == "h") scale = 3600;
    if (unit == "m") scale = 60;
    if (unit == "s") scale = 1;
    if (unit == "ms") scale = 1e-3;
    if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") scale = 1e-6;
    if (unit == "ns") scale = 1e-9;
    if (scale == 0) return false;
    total += v * scale;
    any = true;
    i = unit_end;
  }
  if (!any) return false;
  *seconds = sign * total;
  return true;
}

Status ParseKeepAlive(const json& body, std::optional<double>* seconds, std::string* param) {
  const json* k = Member(body, "keep_alive");
  if (k == nullptr) return Status::Ok();
  if (k->is_number()) {
    const double v = k->get<double>();
    if (!std::isfinite(v)) return Bad(param, "keep_alive", "must be a finite number of seconds");
    *seconds = v;
    return Status::Ok();
  }
  double v = 0;
  if (!k->is_string() || !ParseGoDuration(k->get<std::string>(), &v)) {
    return Bad(param, "keep_alive",
               "must be a number of seconds or a duration such as \"5m\", \"30s\" or \"-1\"");
  }
  *seconds = v;
  return Status::Ok();
}

Status ParseThink(const json& body, std::optional<bool>* out, std::string* param) {
  const json* t = Member(body, "think");
  if (t == nullptr) return Status::Ok();
  if (t->is_boolean()) {
    *out = t->get<bool>();
    return Status::Ok();
  }
  if (t->is_string()) {
    const std::string level = t->get<std::string>();
    if (level == "high" || level == "medium" || level == "low") {
      *out = true;
      return Status::Ok();
    }
  }
  return Bad(param, "think", "must be true, false, \"high\", \"medium\" or \"low\"");
}

}  // namespace sparrow::ollama
