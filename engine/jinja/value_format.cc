// Value as text: Python's str() and repr(), its float repr, json.dumps, markupsafe's escape.
#include <utf8proc.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "engine/common/json_escape.h"
#include "engine/jinja/budget.h"
#include "engine/jinja/value.h"
#include "engine/tokenizer/unicode.h"

namespace sparrow::jinja {
namespace {

// Python's str.isprintable() for one code point (repr escapes the others).
bool IsPrintable(uint32_t c) {
  if (c == ' ') return true;
  if (c < 0x20 || c == 0x7f) return false;
  if (c < 0x7f) return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
}

void AppendHexEscape(char prefix, uint32_t c, int digits, std::string* out) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "\\%c%0*x", prefix, digits, c);
  out->append(buf);
}

void AppendJsonString(std::string_view s, bool ensure_ascii, std::string* out) {
  out->push_back('"');
  if (!ensure_ascii) {
    for (char c : s) AppendJsonEscapedAscii(static_cast<unsigned char>(c), out);
  } else {
    for (uint32_t c : tokenizer::DecodeUtf8Lossy(s)) {
      if (c < 0x80) {
        AppendJsonEscapedAscii(static_cast<unsigned char>(c), out);
      } else if (c < 0x10000) {
        AppendHexEscape('u', c, 4, out);
      } else {  // a surrogate pair, as Python writes it
        uint32_t v = c - 0x10000;
        AppendHexEscape('u', 0xD800 + (v >> 10), 4, out);
        AppendHexEscape('u', 0xDC00 + (v & 0x3FF), 4, out);
      }
    }
  }
  out->push_back('"');
}

struct JsonWriter {
  const std::string* indent;
  std::string_view item_sep;
  std::string_view key_sep;
  bool sort_keys;
  bool ensure_ascii;
  std::string out;
  int depth = 0;

  // Room for the next item's separators and indent, asked before they are written.
  bool RoomForSeparators() const {
    return RoomForString(out.size() + item_sep.size() + key_sep.size() + 2 +
                         (indent ? static_cast<size_t>(depth) * indent->size() : 0));
  }

  void Newline() {
    out.push_back('\n');
    for (int i = 0; i < depth; ++i) out.append(*indent);
  }

  Status Write(const Value& v) {
    if (depth > 512) return InvalidArgument("tojson: nesting too deep");
    switch (v.kind()) {
      case Value::Kind::kNone:
        out.append("null");
        return Status::Ok();
      case Value::Kind::kBool:
        out.append(v.as_bool() ? "true" : "false");
        return Status::Ok();
      case Value::Kind::kInt:
        out.append(std::to_string(v.as_int()));
        return Status::Ok();
      case Value::Kind::kFloat: {
        double d = v.as_double();
        if (std::isnan(d)) {
          out.append("NaN");
        } else if (std::isinf(d)) {
          out.append(d > 0 ? "Infinity" : "-Infinity");
        } else {
          out.append(FormatFloat(d));
        }
        return Status::Ok();
      }
      case Value::Kind::kString:
        // An escape ("\\u00XX") is at most six bytes for one.
        if (!RoomForString(out.size() + v.as_string().size() + 2) ||
            !RoomFor(out.size() + 6 * v.as_string().size() + 2)) {
          return BytesExhausted();
        }
        AppendJsonString(v.as_string(), ensure_ascii, &out);
        return Status::Ok();
      case Value::Kind::kList:
      case Value::Kind::kTuple: {
        const List& items = v.list();
        if (items.empty()) {
          out.append("[]");
          return Status::Ok();
        }
        out.push_back('[');
        ++depth;
        for (size_t i = 0; i < items.size(); ++i) {
          if (!RoomForSeparators()) return BytesExhausted();
          if (i > 0) out.append(item_sep);
          if (indent) Newline();
          SPARROW_RETURN_IF_ERROR(Write(items[i]));
        }
        --depth;
        if (indent) Newline();
        out.push_back(']');
        return Status::Ok();
      }
      case Value::Kind::kDict: {
        // Python's json.dumps writes non-string keys as their JSON text, as strings.
        std::vector<std::pair<std::string, const Value*>> entries;
        for (const auto& [k, e] : v.dict().items) {
          std::string key;
          if (k.is_string()) {
            key = k.as_string();
          } else if (k.kind() == Value::Kind::kNone || k.is_number()) {
            SPARROW_ASSIGN_OR_RETURN(key, k.ToJson(nullptr, ", ", ": ", false));
          } else {
            return InvalidArgument("keys must be str, int, float, bool or None, not " +
                                   k.TypeName());
          }
          entries.emplace_back(std::move(key), &e);
        }
        if (sort_keys) {
          std::stable_sort(entries.begin(), entries.end(),
                           [](const auto& a, const auto& b) { return a.first < b.first; });
        }
        if (entries.empty()) {
          out.append("{}");
          return Status::Ok();
        }
        out.push_back('{');
        ++depth;
        for (size_t i = 0; i < entries.size(); ++i) {
          if (!RoomForSeparators() || !RoomFor(out.size() + 6 * entries[i].first.size())) {
            return BytesExhausted();
          }
          if (i > 0) out.append(item_sep);
          if (indent) Newline();
          AppendJsonString(entries[i].first, ensure_ascii, &out);
          out.append(key_sep);
          SPARROW_RETURN_IF_ERROR(Write(*entries[i].second));
        }
        --depth;
        if (indent) Newline();
        out.push_back('}');
        return Status::Ok();
      }
      default:
        return InvalidArgument("Object of type " + v.TypeName() + " is not JSON serializable");
    }
  }
};

void AppendRepr(const Value& v, std::string* out, int depth);

void AppendItems(const List& items, std::string* out, int depth) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (!RoomForString(out->size() + 2)) return;
    if (i > 0) out->append(", ");
    AppendRepr(items[i], out, depth + 1);
  }
}

void AppendRepr(const Value& v, std::string* out, int depth) {
  if (depth > 256) {
    out->append("...");
    return;
  }
  switch (v.kind()) {
    case Value::Kind::kString:
      // Escapes at most quadruple a byte ("\\xNN"): asked before the copy is made.
      if (!RoomForString(out->size() + v.as_string().size() + 2) ||
          !RoomFor(out->size() + 4 * v.as_string().size() + 2)) {
        return;
      }
      out->append(ReprString(v.as_string()));
      return;
    case Value::Kind::kList:
      out->push_back('[');
      AppendItems(v.list(), out, depth);
      out->push_back(']');
      return;
    case Value::Kind::kTuple:
      out->push_back('(');
      AppendItems(v.list(), out, depth);
      if (v.list().size() == 1) out->push_back(',');
      out->push_back(')');
      return;
    case Value::Kind::kDict:
    case Value::Kind::kNamespace: {
      if (v.kind() == Value::Kind::kNamespace) out->append("<Namespace ");
      out->push_back('{');
      bool first = true;
      for (const auto& [k, e] : v.dict().items) {
        if (!RoomForString(out->size() + 4)) return;
        if (!first) out->append(", ");
        first = false;
        AppendRepr(k, out, depth + 1);
        out->append(": ");
        AppendRepr(e, out, depth + 1);
      }
      out->push_back('}');
      if (v.kind() == Value::Kind::kNamespace) out->push_back('>');
      return;
    }
    case Value::Kind::kUndefined:
      out->append("Undefined");
      return;
    default:
      out->append(v.Str());
      return;
  }
}

}  // namespace

std::string Value::Str() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "";
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return as_bool() ? "True" : "False";
    case Kind::kInt:
      return std::to_string(as_int());
    case Kind::kFloat:
      return FormatFloat(as_double());
    case Kind::kString:
      return as_string();
    case Kind::kGenerator:
      return "<generator object>";
    case Kind::kCallable:
      return "<function " + callable().name + ">";
    default: {
      std::string out;
      AppendRepr(*this, &out, 0);
      return out;
    }
  }
}

std::string Value::Repr() const {
  std::string out;
  AppendRepr(*this, &out, 0);
  return out;
}

Result<std::string> Value::ToJson(const std::string* indent, std::string_view item_sep,
                                  std::string_view key_sep, bool sort_keys,
                                  bool ensure_ascii) const {
  JsonWriter w{indent, item_sep, key_sep, sort_keys, ensure_ascii, {}};
  SPARROW_RETURN_IF_ERROR(w.Write(*this));
  return std::move(w.out);
}

std::string FormatFloat(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  // Shortest round-trip digits, laid out the way Python's float.__repr__ lays them out.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  size_t e = sci.find('e');
  std::string mant = sci.substr(0, e);
  int exp = std::stoi(sci.substr(e + 1));
  bool neg = !mant.empty() && mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant) {
    if (c != '.') digits.push_back(c);
  }
  std::string out = neg ? "-" : "";
  if (exp >= -4 && exp < 16) {
    int point = exp + 1;  // digits before the decimal point
    if (point <= 0) {
      out += "0." + std::string(static_cast<size_t>(-point), '0') + digits;
    } else if (static_cast<size_t>(point) >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(point) - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(point)) + "." +
             digits.substr(static_cast<size_t>(point));
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out.append(1, '.').append(digits, 1);
  char ebuf[16];
  std::snprintf(ebuf, sizeof(ebuf), "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
  return out + ebuf;
}

std::string EscapeHtml(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string ReprString(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (uint32_t c : tokenizer::DecodeUtf8Lossy(s)) {
    if (c == static_cast<uint32_t>(quote) || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out.append("\\n");
    } else if (c == '\r') {
      out.append("\\r");
    } else if (c == '\t') {
      out.append("\\t");
    } else if (IsPrintable(c)) {
      tokenizer::AppendUtf8(c, &out);
    } else if (c < 0x100) {
      AppendHexEscape('x', c, 2, &out);
    } else if (c < 0x10000) {
      AppendHexEscape('u', c, 4, &out);
    } else {
      AppendHexEscape('U', c, 8, &out);
    }
  }
  out.push_back(quote);
  return out;
}

}  // namespace sparrow::jinja
