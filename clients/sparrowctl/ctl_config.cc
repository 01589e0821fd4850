#include "clients/sparrowctl/ctl_config.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace sparrow::ctl {
namespace {

// A relative file name in the config is relative to the config file's folder.
std::string Resolve(const std::string& file, const std::string& config_path) {
  if (file.empty() || file.front() == '/' || config_path.find('/') == std::string::npos) {
    return file;
  }
  return config_path.substr(0, config_path.find_last_of('/') + 1) + file;
}

bool Fail(std::string* error, const std::string& path, const std::string& what) {
  *error = path + ": " + what;
  return false;
}

}  // namespace

bool ParseCtlConfig(const std::string& text, const std::string& path, CtlConfig* out,
                    std::string* error) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Fail(error, path, std::string("not valid YAML: ") + e.what());
  }
  out->path = path;
  if (root.IsNull()) return true;
  if (!root.IsMap()) return Fail(error, path, "must be a mapping with 'devices' (and 'default')");
  for (const auto& top : root) {
    const std::string key = top.first.as<std::string>("");
    if (key == "default") {
      if (!top.second.IsScalar()) return Fail(error, path, "'default' must be a device name");
      out->default_device = top.second.Scalar();
    } else if (key == "devices") {
      if (!top.second.IsMap()) return Fail(error, path, "'devices' must map names to devices");
      for (const auto& d : top.second) {
        const std::string name = d.first.as<std::string>("");
        const std::string where = "devices." + name;
        if (!d.second.IsMap()) return Fail(error, path, "'" + where + "' must be a mapping");
        DeviceEntry e;
        for (const auto& f : d.second) {
          const std::string field = f.first.as<std::string>("");
          const std::string at = "'" + where + "." + field + "'";
          if (!f.second.IsScalar()) return Fail(error, path, at + " must be a single value");
          const std::string v = f.second.Scalar();
          if (field == "host") {
            e.host = v;
          } else if (field == "port" || field == "timeout_ms") {
            char* end = nullptr;
            const long n = std::strtol(v.c_str(), &end, 10);
            const long max = field == "port" ? 65535 : 3600 * 1000;
            if (v.empty() || *end != '\0' || n < 1 || n > max) {
              return Fail(
                  error, path,
                  at + " must be a number from 1 to " + std::to_string(max) + ", got '" + v + "'");
            }
            (field == "port" ? e.port : e.timeout_ms) = static_cast<int>(n);
          } else if (field == "ca") {
            e.ca = Resolve(v, path);
          } else if (field == "key_file") {
            e.key_file = Resolve(v, path);
          } else if (field == "api_key_file") {
            e.api_key_file = Resolve(v, path);
          } else {
            return Fail(
                error, path,
                "unknown field " + at + " (host, port, ca, key_file, api_key_file, timeout_ms)");
          }
        }
        if (e.host.empty()) return Fail(error, path, "'" + where + ".host' is missing");
        out->devices[name] = e;
      }
    } else {
      return Fail(error, path, "unknown key '" + key + "' (default, devices)");
    }
  }
  if (!out->default_device.empty() && out->devices.count(out->default_device) == 0) {
    return Fail(error, path,
                "'default' is '" + out->default_device + "', which is not under 'devices'");
  }
  return true;
}

bool LoadCtlConfig(const std::string& path, bool required, CtlConfig* out, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    if (!required) return true;
    *error = "cannot read the config file '" + path + "'";
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseCtlConfig(ss.str(), path, out, error);
}

std::string DefaultCtlConfigPath() {
  if (const char* p = std::getenv("SPARROW_CTL_CONFIG"); p != nullptr && *p != '\0') return p;
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x != nullptr && *x != '\0') {
    return std::string(x) + "/sparrow/ctl.yaml";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/.config/sparrow/ctl.yaml";
}

}  // namespace sparrow::ctl
