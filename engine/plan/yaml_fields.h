#pragma once
// Reading typed fields out of a YAML mapping with errors a user can act on: each names the file
// (or origin) and the key path ("hw.yaml: kernels.q4_0.dense_gb_per_s[2]: must be positive").
// Internal to engine/plan (the hardware profile and plan readers). Thread-safe (no state).
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "engine/common/result.h"

namespace sparrow::plan::yaml {

// Parses `text`; the error names `where`. A document that is not a mapping is an error.
Result<YAML::Node> ParseMapping(const std::string& text, const std::string& where);

// The child `key` of mapping `node`; missing is an error naming where + path + key.
Result<YAML::Node> Child(const YAML::Node& node, const std::string& key, const std::string& where,
                         const std::string& path);

// A number; `positive` also refuses zero and negatives. Not a finite number is an error.
Result<double> Number(const YAML::Node& node, const std::string& where, const std::string& path,
                      bool positive);
// An integer in [lo, hi].
Result<int64_t> Integer(const YAML::Node& node, const std::string& where, const std::string& path,
                        int64_t lo, int64_t hi);
// A sequence of positive numbers, of exactly `size` entries when `size` >= 0.
Result<std::vector<double>> PositiveList(const YAML::Node& node, const std::string& where,
                                         const std::string& path, int64_t size);

// "where: path: message", the shape of every error above.
Status FieldError(const std::string& where, const std::string& path, const std::string& message);

}  // namespace sparrow::plan::yaml
