#pragma once
// A minimal GGUF v3 writer (metadata only, no tensors) for building malformed tokenizer
// metadata in tests.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace sparrow::testing {

class MiniGguf {
 public:
  MiniGguf& String(std::string_view key, std::string_view value) {
    Key(key, 8);
    Str(value);
    return Count();
  }
  MiniGguf& U32(std::string_view key, uint32_t value) {
    Key(key, 4);
    Pod(value);
    return Count();
  }
  MiniGguf& I32(std::string_view key, int32_t value) {
    Key(key, 5);
    Pod(value);
    return Count();
  }
  MiniGguf& Bool(std::string_view key, bool value) {
    Key(key, 7);
    Pod(static_cast<uint8_t>(value));
    return Count();
  }
  MiniGguf& Strings(std::string_view key, const std::vector<std::string>& values) {
    ArrayHeader(key, 8, values.size());
    for (const auto& v : values) Str(v);
    return Count();
  }
  MiniGguf& F32s(std::string_view key, const std::vector<float>& values) {
    ArrayHeader(key, 6, values.size());
    for (float v : values) Pod(v);
    return Count();
  }
  MiniGguf& I32s(std::string_view key, const std::vector<int32_t>& values) {
    ArrayHeader(key, 5, values.size());
    for (int32_t v : values) Pod(v);
    return Count();
  }

  std::vector<uint8_t> Build() const {
    std::vector<uint8_t> out = {'G', 'G', 'U', 'F'};
    auto put = [&](auto v) {
      const auto* p = reinterpret_cast<const uint8_t*>(&v);
      out.insert(out.end(), p, p + sizeof(v));
    };
    put(uint32_t{3});
    put(uint64_t{0});  // tensors
    put(n_kv_);
    out.insert(out.end(), body_.begin(), body_.end());
    while (out.size() % 32) out.push_back(0);
    return out;
  }

 private:
  template <typename T>
  void Pod(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    body_.insert(body_.end(), p, p + sizeof(v));
  }
  void Str(std::string_view s) {
    Pod(static_cast<uint64_t>(s.size()));
    body_.insert(body_.end(), s.begin(), s.end());
  }
  void Key(std::string_view key, uint32_t type) {
    Str(key);
    Pod(type);
  }
  void ArrayHeader(std::string_view key, uint32_t elem_type, size_t n) {
    Key(key, 9);
    Pod(elem_type);
    Pod(static_cast<uint64_t>(n));
  }
  MiniGguf& Count() {
    ++n_kv_;
    return *this;
  }

  std::vector<uint8_t> body_;
  uint64_t n_kv_ = 0;
};

}  // namespace sparrow::testing
