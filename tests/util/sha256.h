#pragma once
// SHA-256 of a byte string, as lowercase hex (FIPS 180-4), for checking that a regenerated model
// file is the one a golden was made from. Pure function; thread-safe.
#include <string>
#include <string_view>

namespace sparrow::testing {

std::string Sha256Hex(std::string_view bytes);

}  // namespace sparrow::testing
