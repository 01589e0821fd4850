#pragma once
// Python str operations on UTF-8 text, counted in code points as Python counts them: length,
// indexing, slicing, case mapping, strip, split, splitlines. Pure functions; thread-safe.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sparrow::jinja {

std::vector<uint32_t> CodePoints(std::string_view s);
std::string FromCodePoints(const std::vector<uint32_t>& cps, size_t begin, size_t end);
size_t CodePointLength(std::string_view s);

// Python's slice index arithmetic over a sequence of `length`: the positions a[start:stop:step]
// selects. `step` must not be 0.
std::vector<size_t> SliceIndices(size_t length, std::optional<int64_t> start,
                                 std::optional<int64_t> stop, int64_t step);

std::string Upper(std::string_view s);
std::string Lower(std::string_view s);
std::string Capitalize(std::string_view s);   // str.capitalize()
std::string TitleMethod(std::string_view s);  // str.title()
bool IsLower(std::string_view s);             // str.islower()
bool IsUpper(std::string_view s);             // str.isupper()

// str.strip/lstrip/rstrip: `chars` null strips whitespace.
std::string Strip(std::string_view s, const std::string* chars, bool left, bool right);
// str.split(sep, maxsplit): a null `sep` splits on runs of whitespace.
std::vector<std::string> Split(std::string_view s, const std::string* sep, int64_t maxsplit);
// str.splitlines() without keepends.
std::vector<std::string> SplitLines(std::string_view s);
// str.replace(old, new, count); count < 0 replaces all.
std::string Replace(std::string_view s, std::string_view from, std::string_view to, int64_t count);
// str.find(sub): the code point index, or -1.
int64_t Find(std::string_view s, std::string_view sub);

}  // namespace sparrow::jinja
