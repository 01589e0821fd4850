#pragma once
// The fields Ollama's generation and embedding requests share: `options` (the Modelfile
// parameters a request may set: sampling, num_predict, stop, num_ctx), `format` ("json" or a
// JSON schema), `keep_alive` (a number of seconds or a Go duration such as "5m") and `think`.
// Each is checked for type and range; errors name the field ("options.top_k") and set `*param`
// to it. Options sparrowd has no use for (num_gpu, mirostat, ...) are accepted and ignored, as
// Ollama ignores those its runner lacks. Pure functions, thread-safe.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/common/result.h"

namespace sparrow::ollama {

// Ollama's defaults (its Modelfile documentation) where the request leaves a field out.
struct Options {
  float temperature = 0.8f;  // 0: greedy
  int32_t top_k = 40;        // 0: off
  float top_p = 0.9f;
  float min_p = 0.0f;
  float repeat_penalty = 1.1f;         // 1: off
  int32_t repeat_last_n = 64;          // tokens the penalties look back on (0: none)
  bool repeat_last_n_context = false;  // repeat_last_n -1: the whole context
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  std::optional<uint64_t> seed;        // unset (or -1): random
  std::optional<int64_t> num_predict;  // unset (or -1, -2): until the end or the context is full
  std::vector<std::string> stop;       // a string or a list of strings
  std::optional<int64_t> num_ctx;      // the context the answer must fit in
};

struct Format {
  enum class Kind { kNone, kJson, kSchema };
  Kind kind = Kind::kNone;
  std::string schema;  // kSchema: the schema's JSON text (keys sorted; see JsonTextInOrder)
};

// `options` of `body` into `*out` (Ollama's defaults for what it leaves out).
Status ParseOptions(const nlohmann::json& body, Options* out, std::string* param);
// `format`: absent, null or "" (free text), "json" (any JSON object) or a JSON schema object.
Status ParseFormat(const nlohmann::json& body, Format* out, std::string* param);
// `keep_alive` in seconds: a number, or a string holding a number of seconds or a Go duration
// ("300ms", "1.5h", "2h45m"); negative keeps the model loaded for ever. Unset when absent.
Status ParseKeepAlive(const nlohmann::json& body, std::optional<double>* seconds,
                      std::string* param);
// `think`: true or false, or a level ("high", "medium", "low"), which turns thinking on.
Status ParseThink(const nlohmann::json& body, std::optional<bool>* out, std::string* param);
// A Go duration string in seconds; false when `text` is not one.
bool ParseGoDuration(const std::string& text, double* seconds);

}  // namespace sparrow::ollama
