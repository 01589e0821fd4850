#pragma once
// Loads ServerConfig in layers: built-in defaults < YAML file (--config / SPARROW_CONFIG)
// < SPARROW_<KEY> environment variables < --<key> flags. Unknown YAML keys and bad values are
// errors that name the key, the value and where it came from. Thread-compatible.
#include <functional>
#include <string>
#include <vector>

#include "config/server_config.h"
#include "engine/common/result.h"

namespace sparrow {

// Returns the value of an environment variable, or nullptr.
using EnvLookup = std::function<const char*(const char*)>;

struct ConfigLoadResult {
  ServerConfig config;
  bool exit_now = false;  // --help / --version was given: print `message`, exit 0
  std::string message;
};

// `args` excludes the program name. InvalidArgument on any bad key, value or flag.
Result<ConfigLoadResult> LoadServerConfig(const std::vector<std::string>& args,
                                          const EnvLookup& env);

// Parses and checks one YAML document (a mapping of the keys above) on top of `config`.
Status ApplyYamlConfig(const std::string& yaml_text, const std::string& origin,
                       ServerConfig* config);
// Checks cross-key rules (ranges, log_format, api_key off loopback).
Status ValidateServerConfig(const ServerConfig& config);
// 127.x.x.x, ::1 or "localhost": only this machine can connect.
bool IsLoopbackHost(const std::string& host);

}  // namespace sparrow
