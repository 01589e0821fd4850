#include <sstream>
#include <string>

#include "engine/common/env.h"
#include "engine/memory/pressure_source.h"

namespace sparrow {
namespace {

class MemInfoPressureSource : public PressureSource {
 public:
  explicit MemInfoPressureSource(std::string path) : path_(std::move(path)) {}
  std::string_view name() const override { return "meminfo"; }
  std::vector<pollfd> fds() const override { return {}; }
  PressureReading Read(int) override {
    uint64_t total = 0, available = 0;
    if (!ReadMemInfo(path_, &total, &available) || total == 0) return {};
    const uint64_t margin = total / 10;  // the "medium" line
    room_ = available > margin ? available - margin : 0;
    const double share = static_cast<double>(available) / static_cast<double>(total);
    PressureLevel level = PressureLevel::kNone;
    if (share < 0.05) {
      level = PressureLevel::kCritical;
    } else if (share < 0.10) {
      level = PressureLevel::kMedium;
    }
    return {level, "MemAvailable " + std::to_string(available >> 20) + " of " +
                       std::to_string(total >> 20) + " MiB"};
  }

  std::optional<uint64_t> room_bytes() const override { return room_; }

 private:
  std::string path_;
  std::optional<uint64_t> room_;
};

}  // namespace

bool ReadMemInfo(const std::string& path, uint64_t* total, uint64_t* available) {
  std::istringstream in(ReadSmallFileOrEmpty(path));
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  bool have_total = false, have_available = false;
  while (in >> key >> kb) {
    std::getline(in, unit);
    if (key == "MemTotal:") {
      *total = kb << 10;
      have_total = true;
    } else if (key == "MemAvailable:") {
      *available = kb << 10;
      have_available = true;
    }
  }
  return have_total && have_available;
}

Result<std::unique_ptr<PressureSource>> OpenMemInfoPressureSource(const std::string& path) {
  uint64_t total = 0, available = 0;
  if (!ReadMemInfo(path, &total, &available)) {
    return Unsupported(path + ": no MemTotal and MemAvailable lines");
  }
  return std::unique_ptr<PressureSource>(std::make_unique<MemInfoPressureSource>(path));
}

}  // namespace sparrow
