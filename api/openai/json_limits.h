#pragma once
// Where JSON enters sparrowd (request bodies, tool parameters and arguments over gRPC, admin
// bodies, a model's tool-call text) its nesting is bounded once, here. nlohmann::json copies,
// compares and dumps recursively, and so do the walks that mark client text and print Python-
// style JSON for templates: a body of 150,000 '[' overflows the stack of any of them. With every
// entry bounded, each later walk is bounded by kMaxJsonDepth plus the few levels sparrowd wraps
// around a value. The parse itself is iterative (nlohmann's SAX parser), so it is safe at any
// depth. Pure functions, thread-safe.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/result.h"

namespace sparrow::openai {

// Levels of objects and arrays: {"a": [1]} is 2 deep. JSON schemas of real tools stay under 20.
inline constexpr int kMaxJsonDepth = 64;

namespace json_limits_internal {

// The position of the parse as a path ("tools[0].function.parameters"), kept from the parser's
// callback events so that an error can say where it is.
class PathTracker {
 public:
  // Returns false when a container would open deeper than `max_depth`.
  template <class Json>
  bool Event(int depth, typename Json::parse_event_t event, const Json& parsed, int max_depth);
  // The path of the containers open now, or of the first `max_parts` of them and "...".
  std::string Path(size_t max_parts = 8) const;
  // The first key of the top-level object ("tools"), "" before any.
  const std::string& TopKey() const { return top_key_; }
  const std::string& LastKey() const { return last_key_; }

 private:
  struct Frame {
    bool is_array = false;
    std::string key;   // objects: the member being read
    size_t index = 0;  // arrays: the element being read
  };
  void ChildDone(int depth);
  std::vector<Frame> frames_;
  std::string top_key_;
  std::string last_key_;
};

template <class Json>
bool PathTracker::Event(int depth, typename Json::parse_event_t event, const Json& parsed,
                        int max_depth) {
  using E = typename Json::parse_event_t;
  const size_t d = static_cast<size_t>(depth);
  switch (event) {
    case E::object_start:
    case E::array_start:
      if (depth >= max_depth) return false;
      frames_.resize(d);
      frames_.push_back({event == E::array_start, "", 0});
      break;
    case E::key:
      if (d >= 1 && d <= frames_.size() && parsed.is_string()) {
        frames_[d - 1].key = parsed.template get<std::string>();
        last_key_ = frames_[d - 1].key;
        if (d == 1) top_key_ = last_key_;
      }
      break;
    case E::value:
      ChildDone(depth);
      break;
    case E::object_end:
    case E::array_end:
      frames_.resize(std::min(d, frames_.size()));
      ChildDone(depth);
      break;
  }
  return true;
}

}  // namespace json_limits_internal

// Parses `text` (JSON of a field named `field`, "" for a whole request body). InvalidArgument
// when it is not JSON, or nests deeper than `max_depth`, naming the field and the path inside it
// where the limit was met. `*param`, when given, receives the top-level field at fault.
template <class Json = nlohmann::json>
Result<Json> ParseBoundedJson(std::string_view text, std::string_view field,
                              std::string* param = nullptr, int max_depth = kMaxJsonDepth) {
  json_limits_internal::PathTracker path;
  bool too_deep = false;
  auto guard = [&](int depth, typename Json::parse_event_t event, Json& parsed) {
    if (!path.Event(depth, event, parsed, max_depth)) {
      too_deep = true;
      // Stops the parse at once: nothing deeper is read or built.
      throw std::length_error("nesting");
    }
    return true;
  };
  const std::string name = field.empty() ? "the request body" : "'" + std::string(field) + "'";
  try {
    return Json::parse(text.begin(), text.end(), guard);
  } catch (const std::length_error&) {
    if (!too_deep) throw;
    if (param) *param = field.empty() ? path.TopKey() : std::string(field);
    const std::string at = path.Path();
    return InvalidArgument(name + " nests objects and arrays deeper than " +
                           std::to_string(max_depth) + " levels" +
                           (at.empty() ? "" : " (at '" + at + "')"));
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at ..." -> "parse error at ..."
    if (const size_t cut = what.find("] "); cut != std::string::npos) what = what.substr(cut + 2);
    if (param) *param = field.empty() ? path.LastKey() : std::string(field);
    const std::string& key = path.LastKey();
    return InvalidArgument(name + " is not valid JSON: " + what +
                           (field.empty() && !key.empty() ? " (after key '" + key + "')" : ""));
  }
}

}  // namespace sparrow::openai
