#pragma once
// sparrowctl's device list: ~/.config/sparrow/ctl.yaml (or --config FILE) names the devices an
// operator steers, each with its address, certificate and key files, so that
// `sparrowctl --device phone status` needs nothing else:
//
//   default: phone
//   devices:
//     phone:
//       host: 192.168.1.20
//       port: 50051            # optional (50051)
//       ca: phone.crt          # optional; relative paths are relative to this file
//       key_file: phone-admin.keys
//       api_key_file: phone-api.key
//       timeout_ms: 10000
//
// Flags given on the command line win over the file. Errors name the file and the field.
#include <map>
#include <string>

namespace sparrow::ctl {

struct DeviceEntry {
  std::string host;
  int port = 0;  // 0: not set
  std::string ca, key_file, api_key_file;
  int timeout_ms = 0;  // 0: not set
};

struct CtlConfig {
  std::string path;  // where it was read from ("" when there is no file)
  std::string default_device;
  std::map<std::string, DeviceEntry> devices;
};

// Parses `text` (the contents of `path`); false with *error naming `path` and the field.
bool ParseCtlConfig(const std::string& text, const std::string& path, CtlConfig* out,
                    std::string* error);

// Reads `path`; a missing file is an empty config unless `required` (given with --config).
bool LoadCtlConfig(const std::string& path, bool required, CtlConfig* out, std::string* error);

// $SPARROW_CTL_CONFIG, else $XDG_CONFIG_HOME/sparrow/ctl.yaml, else ~/.config/sparrow/ctl.yaml.
std::string DefaultCtlConfigPath();

}  // namespace sparrow::ctl
