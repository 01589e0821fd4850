#pragma once
// The sizes an operator types: "1.5G", "800M", "800MiB", "2GB", "65536". K, M, G and T (with or
// without "B" or "iB") are powers of 1024, as sparrowd's own settings are in MiB.
#include <cstdint>
#include <string>

namespace sparrow::ctl {

// False, with `error` naming the text, for anything else (negative, empty, unknown unit, more
// than 2^64 bytes).
bool ParseByteSize(const std::string& text, uint64_t* bytes, std::string* error);

}  // namespace sparrow::ctl
