#pragma once
// DeviceMemoryLimit: the most memory this process can hold: its cgroup's limit (v1 or v2) when it
// has one, else the machine's MemTotal; 0 when neither can be read. What a device offers to
// hold layers when several run one model (the shard planner's memory constraint).
#include <cstdint>
#include <string>

namespace sparrow {

uint64_t DeviceMemoryLimit();

// The lowest limit this process's memory cgroups set: v1 memory.limit_in_bytes, v2 memory.max and
// memory.high (where the kernel starts throttling: systemd's MemoryHigh=, the budget sparrowd
// keeps under as a service); 0 when there is none. The paths are FindMemoryCgroupV1/V2's.
uint64_t CgroupMemoryLimit(const std::string& proc_self_cgroup = "/proc/self/cgroup",
                           const std::string& v1_mount = "/sys/fs/cgroup/memory",
                           const std::string& v2_mount = "/sys/fs/cgroup");

// What the device offers this process now: DeviceMemoryLimit, lowered to MemAvailable plus what
// the process already holds (on a phone, most of MemTotal belongs to other apps); 0 when unknown.
uint64_t DeviceMemoryOffer();

// The process's resident bytes (/proc/self/statm: anonymous and mapped file pages); 0 when
// unknown.
uint64_t ProcessResidentBytes();

// The process's anonymous resident bytes (RssAnon in /proc/self/status: heap, stacks, pools; not
// the mapped model file); 0 when unknown.
uint64_t ProcessAnonBytes();

// The resident bytes of this process's mapping that contains `address` (its Rss in
// /proc/self/smaps: the pages of a mapped file this process has read, not the page cache's); 0
// when unknown or not mapped.
uint64_t MappingResidentBytes(const void* address);

}  // namespace sparrow
