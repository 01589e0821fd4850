#pragma once
// Reading typed fields of a JSON request object: each helper leaves `*out` alone when the key
// is absent or null, and otherwise checks the type and range, returning InvalidArgument that
// names the field (and recording it in `*param`); `prefix` goes before the key in that name
// ("options." for a nested object). Internal to api/openai and api/ollama; thread-safe.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "engine/common/status.h"

namespace sparrow::openai {

Status Bad(std::string* param, const std::string& field, const std::string& what);
// The member `key` of object `o`, or null when it is absent or JSON null.
const nlohmann::json* Member(const nlohmann::json& o, const char* key);
Status Number(const nlohmann::json& b, const char* key, double lo, double hi, float* out,
              std::string* param, const std::string& prefix = "");
Status Integer(const nlohmann::json& b, const char* key, int64_t lo, int64_t hi,
               std::optional<int64_t>* out, std::string* param, const std::string& prefix = "");
Status Bool(const nlohmann::json& b, const char* key, bool* out, std::string* param,
            const std::string& prefix = "");
Status String(const nlohmann::json& b, const char* key, std::string* out, std::string* param,
              const std::string& prefix = "");

}  // namespace sparrow::openai
