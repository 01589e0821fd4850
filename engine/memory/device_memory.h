#pragma once
// DeviceMemoryLimit: the most memory this process can hold: its cgroup's limit (v1 or v2) when it
// has one, else the machine's MemTotal; 0 when neither can be read. What a device offers to
// hold layers when several run one model (the shard planner's memory constraint).
#include <cstdint>

namespace sparrow {

uint64_t DeviceMemoryLimit();

}  // namespace sparrow
