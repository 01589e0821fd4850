#include "engine/memory/pressure_level.h"

namespace sparrow {

std::string_view PressureLevelName(PressureLevel level) {
  switch (level) {
    case PressureLevel::kNone:
      return "none";
    case PressureLevel::kLow:
      return "low";
    case PressureLevel::kMedium:
      return "medium";
    case PressureLevel::kCritical:
      return "critical";
  }
  return "none";
}

// The app's own state (RUNNING_*) says how short the device is while it runs; the background
// levels say how close the app is to being killed, which for a server is the same question.
std::optional<PressureLevel> PressureFromTrimMemory(int level) {
  switch (level) {
    case 5:  // TRIM_MEMORY_RUNNING_MODERATE
      return PressureLevel::kLow;
    case 10:  // TRIM_MEMORY_RUNNING_LOW
      return PressureLevel::kMedium;
    case 15:  // TRIM_MEMORY_RUNNING_CRITICAL
      return PressureLevel::kCritical;
    case 20:  // TRIM_MEMORY_UI_HIDDEN: the UI went away; nothing is short yet
      return PressureLevel::kLow;
    case 40:  // TRIM_MEMORY_BACKGROUND
      return PressureLevel::kLow;
    case 60:  // TRIM_MEMORY_MODERATE
      return PressureLevel::kMedium;
    case 80:  // TRIM_MEMORY_COMPLETE: next in line to be killed
      return PressureLevel::kCritical;
    default:
      return std::nullopt;
  }
}

std::optional<PressureLevel> PressureFromTrimMemory(std::string_view level) {
  struct Named {
    std::string_view name;
    int value;
  };
  static constexpr Named kLevels[] = {
      {"RUNNING_MODERATE", 5}, {"RUNNING_LOW", 10}, {"RUNNING_CRITICAL", 15}, {"UI_HIDDEN", 20},
      {"BACKGROUND", 40},      {"MODERATE", 60},    {"COMPLETE", 80},
  };
  if (level.starts_with("TRIM_MEMORY_")) level.remove_prefix(12);
  for (const Named& n : kLevels) {
    if (n.name == level) return PressureFromTrimMemory(n.value);
  }
  return std::nullopt;
}

}  // namespace sparrow
