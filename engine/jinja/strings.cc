#include "engine/jinja/strings.h"

#include <utf8proc.h>

#include "engine/jinja/budget.h"
#include "engine/tokenizer/unicode.h"

namespace sparrow::jinja {
namespace {

bool IsAscii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

// Python's str.isspace() set: White_Space plus the ASCII separators \x1c-\x1f.
bool IsPySpace(uint32_t c) {
  return (c >= 0x1c && c <= 0x1f) || tokenizer::IsUnicodeWhitespace(c);
}

uint32_t ToUpperCp(uint32_t c) {
  return static_cast<uint32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c)));
}
uint32_t ToLowerCp(uint32_t c) {
  return static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
}
uint32_t ToTitleCp(uint32_t c) {
  return static_cast<uint32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(c)));
}
bool IsCased(uint32_t c) {
  return ToUpperCp(c) != c || ToLowerCp(c) != c || ToTitleCp(c) != c;
}

std::string Encode(const std::vector<uint32_t>& cps) {
  return FromCodePoints(cps, 0, cps.size());
}

}  // namespace

std::vector<uint32_t> CodePoints(std::string_view s) {
  NoteScanned(s.size());
  return tokenizer::DecodeUtf8Lossy(s);
}

std::string FromCodePoints(const std::vector<uint32_t>& cps, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end && i < cps.size(); ++i) tokenizer::AppendUtf8(cps[i], &out);
  return out;
}

size_t CodePointLength(std::string_view s) {
  NoteScanned(s.size());
  size_t n = 0;
  for (char c : s) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::vector<size_t> SliceIndices(size_t length, std::optional<int64_t> start,
                                 std::optional<int64_t> stop, int64_t step) {
  auto len = static_cast<int64_t>(length);
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v < 0 ? *v + len : *v;
    if (step > 0) return std::min(std::max<int64_t>(x, 0), len);
    return std::min(std::max<int64_t>(x, -1), len - 1);
  };
  int64_t b = clamp(start, step > 0 ? 0 : len - 1);
  int64_t e = clamp(stop, step > 0 ? len : -1);
  std::vector<size_t> out;
  const int64_t span = step > 0 ? e - b : b - e;
  const auto count = static_cast<size_t>(span > 0 ? (span - 1) / (step > 0 ? step : -step) + 1 : 0);
  if (!RoomFor(count * sizeof(size_t))) return out;  // the render fails at its next step
  out.reserve(count);
  for (int64_t i = b; step > 0 ? i < e : i > e; i += step) out.push_back(static_cast<size_t>(i));
  return out;
}

// Python's upper() and lower() use Unicode's full case mappings, where a few characters
// become two or three; utf8proc has only the one-to-one mappings.
const char* FullUpper(uint32_t c) {
  switch (c) {
    case 0xDF:
      return "SS";
    case 0x149:
      return "\u02BCN";
    case 0x1F0:
      return "J\u030C";
    case 0x587:
      return "\u0535\u0552";
    case 0xFB00:
      return "FF";
    case 0xFB01:
      return "FI";
    case 0xFB02:
      return "FL";
    case 0xFB03:
      return "FFI";
    case 0xFB04:
      return "FFL";
    case 0xFB05:
    case 0xFB06:
      return "ST";
    default:
      return nullptr;
  }
}

std::string Upper(std::string_view s) {
  std::string out;
  for (uint32_t c : CodePoints(s)) {
    if (const char* full = FullUpper(c)) {
      out += full;
    } else {
      tokenizer::AppendUtf8(ToUpperCp(c), &out);
    }
  }
  return out;
}

std::string Lower(std::string_view s) {
  std::string out;
  for (uint32_t c : CodePoints(s)) {
    if (c == 0x130) {
      out += "i\u0307";  // İ
    } else {
      tokenizer::AppendUtf8(ToLowerCp(c), &out);
    }
  }
  return out;
}

std::string Capitalize(std::string_view s) {
  auto cps = CodePoints(s);
  for (size_t i = 0; i < cps.size(); ++i) cps[i] = i == 0 ? ToTitleCp(cps[i]) : ToLowerCp(cps[i]);
  return Encode(cps);
}

std::string TitleMethod(std::string_view s) {
  auto cps = CodePoints(s);
  bool prev_cased = false;
  for (auto& c : cps) {
    bool cased = IsCased(c);
    c = prev_cased ? ToLowerCp(c) : ToTitleCp(c);
    prev_cased = cased;
  }
  return Encode(cps);
}

namespace {

// str.islower()/isupper(): some cased character, and none of the other case.
bool IsAllOneCase(std::string_view s, bool upper) {
  bool any = false;
  for (uint32_t c : CodePoints(s)) {
    uint32_t same = upper ? ToUpperCp(c) : ToLowerCp(c);
    uint32_t other = upper ? ToLowerCp(c) : ToUpperCp(c);
    if (other != c && same == c) any = true;
    if (same != c) return false;
  }
  return any;
}

}  // namespace

bool IsLower(std::string_view s) {
  return IsAllOneCase(s, false);
}
bool IsUpper(std::string_view s) {
  return IsAllOneCase(s, true);
}

std::string Strip(std::string_view s, const std::string* chars, bool left, bool right) {
  auto cps = CodePoints(s);
  std::vector<uint32_t> set;
  if (chars) set = CodePoints(*chars);
  auto strip = [&](uint32_t c) {
    if (!chars) return IsPySpace(c);
    for (uint32_t x : set) {
      if (x == c) return true;
    }
    return false;
  };
  size_t b = 0;
  size_t e = cps.size();
  if (left) {
    while (b < e && strip(cps[b])) ++b;
  }
  if (right) {
    while (e > b && strip(cps[e - 1])) --e;
  }
  return FromCodePoints(cps, b, e);
}

namespace {

// Whether one more part fits the render's budget, as the Value it becomes.
bool RoomForPart(const std::vector<std::string>& parts) {
  return RoomFor((parts.size() + 1) * (sizeof(std::string) + RenderBudget::kValueOverhead));
}

}  // namespace

std::vector<std::string> Split(std::string_view s, const std::string* sep, int64_t maxsplit) {
  NoteScanned(s.size());
  std::vector<std::string> out;
  if (sep) {
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      size_t at = s.find(*sep, pos);
      if (at == std::string_view::npos || !RoomForPart(out)) break;
      out.emplace_back(s.substr(pos, at - pos));
      pos = at + sep->size();
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  auto cps = CodePoints(s);
  size_t i = 0;
  while (true) {
    while (i < cps.size() && IsPySpace(cps[i])) ++i;
    if (i == cps.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      size_t e = cps.size();
      while (e > i && IsPySpace(cps[e - 1])) --e;
      out.push_back(FromCodePoints(cps, i, e));
      break;
    }
    size_t b = i;
    while (i < cps.size() && !IsPySpace(cps[i])) ++i;
    if (!RoomForPart(out)) break;
    out.push_back(FromCodePoints(cps, b, i));
  }
  return out;
}

std::vector<std::string> SplitLines(std::string_view s) {
  auto cps = CodePoints(s);
  std::vector<std::string> out;
  size_t b = 0;
  for (size_t i = 0; i < cps.size(); ++i) {
    uint32_t c = cps[i];
    bool brk = c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || (c >= 0x1c && c <= 0x1e) ||
               c == 0x85 || c == 0x2028 || c == 0x2029;
    if (!brk) continue;
    if (!RoomForPart(out)) break;
    out.push_back(FromCodePoints(cps, b, i));
    if (c == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
    b = i + 1;
  }
  if (b < cps.size()) out.push_back(FromCodePoints(cps, b, cps.size()));
  return out;
}

std::string Replace(std::string_view s, std::string_view from, std::string_view to, int64_t count) {
  std::string out;
  if (from.empty()) {
    // Python inserts `to` before every code point and at the end.
    auto cps = CodePoints(s);
    int64_t done = 0;
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || done < count) {
        if (!RoomForString(out.size() + to.size() + s.size())) return out;
        out.append(to);
        ++done;
      }
      if (i < cps.size()) tokenizer::AppendUtf8(cps[i], &out);
    }
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t at = s.find(from, pos);
    if (at == std::string_view::npos) break;
    if (!RoomForString(out.size() + (at - pos) + to.size())) return out;
    out.append(s.substr(pos, at - pos));
    out.append(to);
    pos = at + from.size();
    ++done;
  }
  out.append(s.substr(pos));
  return out;
}

int64_t Find(std::string_view s, std::string_view sub) {
  NoteScanned(s.size());
  size_t at = s.find(sub);
  if (at == std::string_view::npos) return -1;
  if (IsAscii(s.substr(0, at))) return static_cast<int64_t>(at);
  return static_cast<int64_t>(CodePointLength(s.substr(0, at)));
}

}  // namespace sparrow::jinja
