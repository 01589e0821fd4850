#pragma once
// DeviceMemoryLimit: the most memory this process can hold: its cgroup's limit (v1 or v2) when it
// has one, else the machine's MemTotal; 0 when neither can be read. What a device offers to
// hold layers when several run one model (the shard planner's memory constraint).
#include <cstdint>

namespace sparrow {

uint64_t DeviceMemoryLimit();

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
