#include "clients/sparrowctl/byte_size.h"

#include <cctype>
#include <cmath>

namespace sparrow::ctl {

bool ParseByteSize(const std::string& text, uint64_t* bytes, std::string* error) {
  auto fail = [&] {
    *error = "'" + text + "' is not a size (examples: 1.5G, 800M, 65536)";
    return false;
  };
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  if (i == 0) return fail();
  double value = 0;
  try {
    size_t used = 0;
    value = std::stod(text.substr(0, i), &used);
    if (used != i) return fail();
  } catch (...) {
    return fail();
  }
  std::string unit = text.substr(i);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double scale = 1;
  if (!unit.empty() && std::string("KMGT").find(unit[0]) != std::string::npos) {
    scale = std::pow(1024.0, static_cast<double>(std::string("KMGT").find(unit[0]) + 1));
    unit = unit.substr(1);
    if (unit == "IB" || unit == "B") unit.clear();
  } else if (unit == "B") {
    unit.clear();
  }
  if (!unit.empty()) return fail();
  const double b = std::floor(value * scale);
  if (!std::isfinite(b) || b >= 18446744073709551616.0) return fail();
  *bytes = static_cast<uint64_t>(b);
  return true;
}

}  // namespace sparrow::ctl
