#include "server/http/json_writer.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "engine/common/json_escape.h"

namespace sparrow::server {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The bytes of the well-formed UTF-8 sequence starting at s[i] (its first byte at least 0x80),
// or 0 when there is none; then *bad is how many bytes to replace by one U+FFFD before looking
// again: the bytes up to the first that cannot continue the sequence (that byte is looked at
// again), as nlohmann's decoder does.
size_t Utf8Sequence(std::string_view s, size_t i, size_t* bad) {
  const auto b = static_cast<unsigned char>(s[i]);
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range (the others are 80..BF)
  if (b >= 0xC2 && b <= 0xDF) {
    len = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    len = 3;
    if (b == 0xE0) lo = 0xA0;  // no overlong forms
    if (b == 0xED) hi = 0x9F;  // no surrogates
  } else if (b >= 0xF0 && b <= 0xF4) {
    len = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    *bad = 1;  // a continuation byte, or a byte no sequence starts with
    return 0;
  }
  for (size_t k = 1; k < len; ++k) {
    if (i + k >= s.size()) {
      *bad = s.size() - i;  // cut short at the end
      return 0;
    }
    const auto c = static_cast<unsigned char>(s[i + k]);
    if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF)) {
      *bad = k;
      return 0;
    }
  }
  return len;
}

template <typename T>
void AppendInteger(T v, std::string* out) {
  char buf[24];
  out->append(buf, static_cast<size_t>(std::to_chars(buf, buf + sizeof buf, v).ptr - buf));
}

}  // namespace

void AppendJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      size_t bad = 0;
      const size_t len = Utf8Sequence(s, i, &bad);
      if (len > 0) {
        out->append(s.substr(i, len));
        i += len;
      } else {
        out->append(kReplacement);
        i += bad;
      }
      continue;
    }
    AppendJsonEscapedAscii(c, out);
    ++i;
  }
  out->push_back('"');
}

void AppendJsonDouble(double v, std::string* out) {
  if (!std::isfinite(v)) {
    out->append("null");
    return;
  }
  if (std::signbit(v)) {
    out->push_back('-');
    v = -v;
  }
  if (v == 0) {
    out->append("0.0");
    return;
  }
  // The shortest digits that read back as v, "d.ddde+XX"; then laid out as nlohmann does.
  char sci[32];
  const auto r = std::to_chars(sci, sci + sizeof sci, v, std::chars_format::scientific);
  const std::string_view text(sci, static_cast<size_t>(r.ptr - sci));
  const size_t e = text.find('e');
  std::string digits(1, text[0]);
  if (e > 2) digits.append(text.substr(2, e - 2));
  const int exp10 = std::atoi(std::string(text.substr(e + 1)).c_str());
  const int k = static_cast<int>(digits.size());
  const int n = exp10 + 1;  // where the point goes, counted from the first digit
  constexpr int kMinExp = -4, kMaxExp = 15;
  if (k <= n && n <= kMaxExp) {
    out->append(digits).append(static_cast<size_t>(n - k), '0').append(".0");
  } else if (0 < n && n <= kMaxExp) {
    out->append(digits, 0, static_cast<size_t>(n)).push_back('.');
    out->append(digits, static_cast<size_t>(n));
  } else if (kMinExp < n && n <= 0) {
    out->append("0.").append(static_cast<size_t>(-n), '0').append(digits);
  } else {
    out->push_back(digits[0]);
    if (k > 1) out->append(".").append(digits, 1);
    const int x = n - 1;
    out->push_back('e');
    out->push_back(x < 0 ? '-' : '+');
    const int a = std::abs(x);
    if (a < 10) out->push_back('0');
    out->append(std::to_string(a));
  }
}

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!has_member_.empty()) {
    if (has_member_.back()) out_->push_back(',');
    has_member_.back() = true;
  }
}

void JsonWriter::BeginObject() {
  BeforeValue();
  out_->push_back('{');
  has_member_.push_back(false);
}

void JsonWriter::EndObject() {
  has_member_.pop_back();
  out_->push_back('}');
}

void JsonWriter::BeginArray() {
  BeforeValue();
  out_->push_back('[');
  has_member_.push_back(false);
}

void JsonWriter::EndArray() {
  has_member_.pop_back();
  out_->push_back(']');
}

void JsonWriter::Key(std::string_view key) {
  BeforeValue();
  AppendJsonString(key, out_);
  out_->push_back(':');
  after_key_ = true;
}

void JsonWriter::String(std::string_view s) {
  BeforeValue();
  AppendJsonString(s, out_);
}

void JsonWriter::Int(int64_t v) {
  BeforeValue();
  AppendInteger(v, out_);
}

void JsonWriter::Uint(uint64_t v) {
  BeforeValue();
  AppendInteger(v, out_);
}

void JsonWriter::Double(double v) {
  BeforeValue();
  AppendJsonDouble(v, out_);
}

void JsonWriter::Bool(bool v) {
  BeforeValue();
  out_->append(v ? "true" : "false");
}

void JsonWriter::Null() {
  BeforeValue();
  out_->append("null");
}

}  // namespace sparrow::server
