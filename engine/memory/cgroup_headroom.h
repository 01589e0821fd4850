#pragma once
// The headroom rule both cgroup sources apply on every tick: how close the cgroup's working set
// (usage less its inactive file pages, which reclaim takes first) is to its limit. Without swap,
// reclaim finds nothing in anonymous memory, so the kernel's own events go from silence to
// "critical" just before the OOM kill; the headroom gives the warning they do not. Under 10% of
// the limit free is low, 6% medium, 3% critical.
#include <cstdint>
#include <optional>
#include <string>

#include "engine/memory/pressure_source.h"

namespace sparrow {

// `where` names the cgroup in the reading's detail. No pressure when `limit` is 0 (none). `room`
// receives the bytes the working set may still grow before the headroom reads "low" (nullopt
// with no limit).
PressureReading HeadroomReading(const std::string& where, uint64_t limit, uint64_t usage,
                                uint64_t inactive_file, std::optional<uint64_t>* room);

// The first whitespace-separated number in `file` (0 when unreadable), and the value of `key`
// in a "key value" per line file such as memory.stat or memory.events (0 when absent).
uint64_t ReadCgroupNumber(const std::string& file);
uint64_t ReadCgroupKey(const std::string& file, const std::string& key);

// A limit the kernel reports for "no limit" ("max" in v2, near 2^63 in v1) or anything past the
// machine's memory bounds nothing: 0.
uint64_t ReadCgroupLimit(const std::string& file);

}  // namespace sparrow
