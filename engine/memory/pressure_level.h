#pragma once
// How hard the device wants memory back, on one scale for every source: cgroup v1's
// memory.pressure_level names (low, medium, critical), which Android's lmkd levels and
// onTrimMemory levels map onto.
#include <optional>
#include <string_view>

namespace sparrow {

enum class PressureLevel { kNone = 0, kLow = 1, kMedium = 2, kCritical = 3 };

std::string_view PressureLevelName(PressureLevel level);

// Android's ComponentCallbacks2.onTrimMemory levels, by name (RUNNING_MODERATE, RUNNING_LOW,
// RUNNING_CRITICAL, UI_HIDDEN, BACKGROUND, MODERATE, COMPLETE) or by their numeric values (5, 10,
// 15, 20, 40, 60, 80), as a host app forwards them; nullopt for anything else.
std::optional<PressureLevel> PressureFromTrimMemory(std::string_view level);
std::optional<PressureLevel> PressureFromTrimMemory(int level);

}  // namespace sparrow
