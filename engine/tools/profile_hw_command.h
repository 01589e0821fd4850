#pragma once
// `sparrow profile-hw`: measures this device once (hw_probe.h) and writes the hardware profile
// the planner reads (engine/plan/hardware_profile.h), by default to the user's cache directory.
#include <string>

namespace CLI {
class App;
}

namespace sparrow::tools {

struct ProfileHwOptions {
  std::string model;       // its file is the flash probe's (unless flash_file is given)
  std::string flash_file;  // read by the flash probe
  std::string output;      // empty: plan::DefaultHardwareProfilePath()
  int threads = 0;         // thread counts 1..threads (0: every hardware thread)
  bool quick = false;      // smaller probes: under a second or two, for tests
  bool no_flash = false;
};

void RegisterProfileHwCommand(CLI::App& app, ProfileHwOptions& opts, int& exit_code);
int RunProfileHw(const ProfileHwOptions& opts);

}  // namespace sparrow::tools
