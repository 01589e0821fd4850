#include "engine/tools/cli_checks.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace sparrow::tools {
namespace {

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

CLI::Validator Bounded(double low, bool low_included, double max) {
  const std::string wanted =
      (low_included ? "at least " : "above ") + Number(low) + " and at most " + Number(max);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0' || !std::isfinite(v)) {
          return "'" + text + "' is not a number";
        }
        const bool low_ok = low_included ? v >= low : v > low;
        return low_ok && v <= max ? std::string() : "must be " + wanted + ", not " + text;
      },
      low_included ? "NONNEGATIVE" : "POSITIVE");
}

}  // namespace

CLI::Validator AboveZero(double max) {
  return Bounded(0, /*low_included=*/false, max);
}
CLI::Validator ZeroOrMore(double max) {
  return Bounded(0, /*low_included=*/true, max);
}

}  // namespace sparrow::tools
