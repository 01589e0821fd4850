#pragma once
// JsonWriter: writes JSON text straight onto a string, for answers too large to build as an
// nlohmann::json document first (n choices of top logprobs are millions of small nodes). Its
// output is what nlohmann's dump(-1, ' ', false, error_handler_t::replace) prints for the same
// values: strings escaped alike (invalid UTF-8 becomes U+FFFD, so the text is always valid
// JSON), numbers alike (a double that is not finite is null). Keys are written in the order
// given: a caller matching nlohmann's sorted objects gives them sorted.
// Not thread-safe; one writer per string.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sparrow::server {

class JsonWriter {
 public:
  explicit JsonWriter(std::string* out) : out_(out) {}

  void BeginObject();
  void EndObject();
  void BeginArray();
  void EndArray();
  // An object's member name; its value is the next call.
  void Key(std::string_view key);

  void String(std::string_view s);
  void Int(int64_t v);
  void Uint(uint64_t v);
  void Double(double v);
  void Bool(bool v);
  void Null();

 private:
  void BeforeValue();  // the comma between an array's or an object's members

  std::string* out_;
  std::vector<bool> has_member_;  // per open array or object: something written already
  bool after_key_ = false;
};

// `s` as a JSON string literal (quoted), appended to `out`.
void AppendJsonString(std::string_view s, std::string* out);
// `v` as nlohmann prints a double: shortest round-trip digits, "1.0" for whole numbers,
// exponents from 1e-05 down and 1e+16 up; null when not finite.
void AppendJsonDouble(double v, std::string* out);

}  // namespace sparrow::server
