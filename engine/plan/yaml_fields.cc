#include "engine/plan/yaml_fields.h"

#include <cmath>

namespace sparrow::plan::yaml {

Status FieldError(const std::string& where, const std::string& path, const std::string& message) {
  return InvalidArgument(where + ": " + path + ": " + message);
}

Result<YAML::Node> ParseMapping(const std::string& text, const std::string& where) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(where + ": not valid YAML: " + e.what());
  }
  if (!root.IsMap()) return InvalidArgument(where + ": must be a YAML mapping of keys");
  return root;
}

Result<YAML::Node> Child(const YAML::Node& node, const std::string& key, const std::string& where,
                         const std::string& path) {
  const std::string full = path.empty() ? key : path + "." + key;
  if (!node.IsMap()) return FieldError(where, path.empty() ? "(top)" : path, "must be a mapping");
  YAML::Node child = node[key];
  if (!child.IsDefined() || child.IsNull()) return FieldError(where, full, "missing");
  return child;
}

Result<double> Number(const YAML::Node& node, const std::string& where, const std::string& path,
                      bool positive) {
  double v = 0;
  if (!node.IsScalar() || !YAML::convert<double>::decode(node, v) || !std::isfinite(v)) {
    return FieldError(where, path, "must be a number");
  }
  if (positive && !(v > 0)) return FieldError(where, path, "must be positive");
  return v;
}

Result<int64_t> Integer(const YAML::Node& node, const std::string& where, const std::string& path,
                        int64_t lo, int64_t hi) {
  long long v = 0;
  if (!node.IsScalar() || !YAML::convert<long long>::decode(node, v)) {
    return FieldError(where, path, "must be an integer");
  }
  if (v < lo || v > hi) {
    return FieldError(where, path,
                      "must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " +
                          std::to_string(v));
  }
  return static_cast<int64_t>(v);
}

Result<std::vector<double>> PositiveList(const YAML::Node& node, const std::string& where,
                                         const std::string& path, int64_t size) {
  if (!node.IsSequence()) return FieldError(where, path, "must be a list of numbers");
  if (size >= 0 && static_cast<int64_t>(node.size()) != size) {
    return FieldError(where, path,
                      "must have " + std::to_string(size) +
                          " entries (one per thread count), has " + std::to_string(node.size()));
  }
  std::vector<double> out;
  for (size_t i = 0; i < node.size(); ++i) {
    SPARROW_ASSIGN_OR_RETURN(double v,
                             Number(node[i], where, path + "[" + std::to_string(i) + "]", true));
    out.push_back(v);
  }
  return out;
}

}  // namespace sparrow::plan::yaml
