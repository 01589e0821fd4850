#include "server/chat/random_id.h"

#include <random>

namespace sparrow::server {

std::string RandomAlnum(size_t n) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  static const char* kDigits = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string out;
  for (size_t i = 0; i < n; ++i) out += kDigits[rng() % 36];
  return out;
}

}  // namespace sparrow::server
