#pragma once
// Summary statistics of benchmark samples and the process's peak memory. Pure functions
// (PeakRssBytes reads /proc); thread-safe.
#include <cstdint>
#include <vector>

namespace sparrow::tools {

struct SampleStats {
  double median = 0;
  double mean = 0;
  double stddev = 0;  // sample standard deviation (n - 1); 0 for one sample
  double min = 0;
  double max = 0;
};

// Stats of `samples`; all zero when empty.
SampleStats Summarize(std::vector<double> samples);

// The process's peak resident set so far (VmHWM, falling back to getrusage's ru_maxrss).
uint64_t PeakRssBytes();

}  // namespace sparrow::tools
