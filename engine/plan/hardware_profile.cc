#include "engine/plan/hardware_profile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "engine/common/env.h"
#include "engine/plan/yaml_fields.h"

namespace sparrow::plan {
namespace {

constexpr int kVersion = 1;
constexpr double kGB = 1e9;  // the file's GB/s are decimal, like every bandwidth figure quoted
constexpr double kMiB = 1024.0 * 1024.0;

std::string TypeName(TensorType t) {
  return std::string(TensorTypeName(t));
}

std::optional<TensorType> TypeByName(const std::string& name) {
  for (uint32_t id = 0; id < 64; ++id) {
    auto traits = GetTensorTypeTraits(id);
    if (traits && traits->name == name) return static_cast<TensorType>(id);
  }
  return std::nullopt;
}

double BytesPerWeight(TensorType t) {
  auto traits = GetTensorTypeTraits(t);
  return traits ? static_cast<double>(traits->block_bytes) / traits->block_elems : 4.0;
}

double AtThreads(const std::vector<double>& table, int threads) {
  if (table.empty()) return 0;
  const int i = std::clamp(threads, 1, static_cast<int>(table.size())) - 1;
  return table[static_cast<size_t>(i)];
}

std::string List(const std::vector<double>& v, double unit) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%.4g", i ? ", " : "", v[i] / unit);
    s += buf;
  }
  return s + "]";
}

std::vector<double> Scaled(std::vector<double> v, double unit) {
  for (double& x : v) x *= unit;
  return v;
}

}  // namespace

const KernelRate* HardwareProfile::Kernel(TensorType type) const {
  const KernelRate* best = nullptr;
  double best_gap = 0;
  for (const KernelRate& k : kernels) {
    if (k.type == type) return &k;
    // Kernels stream bytes: a type of about the same bytes per weight runs at about that rate.
    const double gap = std::fabs(std::log(BytesPerWeight(k.type) / BytesPerWeight(type)));
    if (!best || gap < best_gap) best = &k, best_gap = gap;
  }
  return best;
}

double HardwareProfile::DenseRate(TensorType type, int threads) const {
  const KernelRate* k = Kernel(type);
  return k ? AtThreads(k->dense_bytes_per_s, threads) : 0;
}

double HardwareProfile::GatherRate(TensorType type, int threads) const {
  const KernelRate* k = Kernel(type);
  return k ? AtThreads(k->gather_bytes_per_s, threads) : 0;
}

namespace {

// Linear in t between a and b.
double Lerp(double a, double b, double t) {
  return a + t * (b - a);
}

// The rate of the reads measured at `depth`, at `block_bytes`: interpolated in log(block size)
// between the measured sizes, clamped at the ends.
double RateAtDepth(const std::vector<FlashRate>& flash, int depth, uint64_t block_bytes) {
  std::vector<const FlashRate*> row;
  for (const FlashRate& f : flash) {
    if (f.queue_depth == depth) row.push_back(&f);
  }
  std::sort(row.begin(), row.end(),
            [](const FlashRate* a, const FlashRate* b) { return a->block_bytes < b->block_bytes; });
  if (block_bytes <= row.front()->block_bytes) return row.front()->mib_per_s;
  for (size_t i = 1; i < row.size(); ++i) {
    if (block_bytes <= row[i]->block_bytes) {
      const double x0 = std::log(static_cast<double>(row[i - 1]->block_bytes));
      const double x1 = std::log(static_cast<double>(row[i]->block_bytes));
      const double t = (std::log(static_cast<double>(block_bytes)) - x0) / (x1 - x0);
      return Lerp(row[i - 1]->mib_per_s, row[i]->mib_per_s, t);
    }
  }
  return row.back()->mib_per_s;
}

}  // namespace

double HardwareProfile::FlashBytesPerSecond(uint64_t block_bytes, double queue_depth) const {
  if (flash.empty()) return 0;
  // The measured depths around the one asked for (a layer with few misses keeps few in flight
  // and waits about one read's latency for them: the shallow end of the curve), interpolated in
  // log(depth); clamped to the shallowest and deepest measured.
  int below = 0, above = 0;
  for (const FlashRate& f : flash) {
    if (f.queue_depth <= queue_depth) below = std::max(below, f.queue_depth);
    if (f.queue_depth >= queue_depth && (above == 0 || f.queue_depth < above)) {
      above = f.queue_depth;
    }
  }
  if (below == 0) below = above;
  if (above == 0) above = below;
  const double r0 = RateAtDepth(flash, below, block_bytes);
  if (above == below) return r0 * kMiB;
  const double r1 = RateAtDepth(flash, above, block_bytes);
  const double t = (std::log(queue_depth) - std::log(static_cast<double>(below))) /
                   (std::log(static_cast<double>(above)) - std::log(static_cast<double>(below)));
  return Lerp(r0, r1, t) * kMiB;
}

Status ValidateHardwareProfile(const HardwareProfile& hw, const std::string& where) {
  if (hw.max_threads < 1 || hw.max_threads > 1024) {
    return InvalidArgument(where + ": max_threads must be in 1..1024");
  }
  if (hw.kernels.empty()) return InvalidArgument(where + ": kernels: no kernel was measured");
  const auto n = static_cast<size_t>(hw.max_threads);
  auto check = [&](const std::vector<double>& v, const std::string& key) -> Status {
    if (v.size() != n) {
      return InvalidArgument(where + ": " + key + ": needs " + std::to_string(n) +
                             " entries (threads 1.." + std::to_string(n) + "), has " +
                             std::to_string(v.size()));
    }
    for (double x : v) {
      if (!(x > 0) || !std::isfinite(x)) {
        return InvalidArgument(where + ": " + key + ": every entry must be positive");
      }
    }
    return Status::Ok();
  };
  SPARROW_RETURN_IF_ERROR(check(hw.memory_bytes_per_s, "memory_gb_per_s"));
  for (const KernelRate& k : hw.kernels) {
    SPARROW_RETURN_IF_ERROR(check(k.dense_bytes_per_s, "kernels." + TypeName(k.type) + ".dense"));
    SPARROW_RETURN_IF_ERROR(check(k.gather_bytes_per_s, "kernels." + TypeName(k.type) + ".gather"));
  }
  for (const FlashRate& f : hw.flash) {
    if (f.block_bytes == 0 || f.queue_depth < 1 || !(f.mib_per_s > 0)) {
      return InvalidArgument(where + ": flash.rates: block, depth and MiB/s must be positive");
    }
  }
  return Status::Ok();
}

std::string HardwareProfileToYaml(const HardwareProfile& hw) {
  std::ostringstream o;
  o << "# Sparrow hardware profile, written by `sparrow profile-hw`; read by `sparrow plan`.\n"
    << "# Lists have one entry per thread count, 1.." << hw.max_threads << ".\n"
    << "version: " << kVersion << "\n"
    << "max_threads: " << hw.max_threads << "\n"
    << "# Read bandwidth of a buffer far larger than the caches.\n"
    << "memory_gb_per_s: " << List(hw.memory_bytes_per_s, kGB) << "\n"
    << "# Bytes of weights per second through the engine's kernels for one token: whole\n"
    << "# matrices (dense), and scattered rows as the sparse FFN reads them (gather).\n"
    << "kernels:\n";
  for (const KernelRate& k : hw.kernels) {
    o << "  " << TypeName(k.type) << ":\n"
      << "    dense_gb_per_s: " << List(k.dense_bytes_per_s, kGB) << "\n"
      << "    gather_gb_per_s: " << List(k.gather_bytes_per_s, kGB) << "\n";
  }
  o << "# Random O_DIRECT reads of the file named, by block size and reads in flight.\n"
    << "flash:\n"
    << "  file: \"" << hw.flash_file << "\"\n"
    << "  rates:\n";
  for (const FlashRate& f : hw.flash) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "    - {block_kib: %llu, depth: %d, mib_per_s: %.1f}\n",
                  static_cast<unsigned long long>(f.block_bytes / 1024), f.queue_depth,
                  f.mib_per_s);
    o << buf;
  }
  if (hw.flash.empty()) o << "    []\n";
  if (hw.store_seconds_per_neuron > 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f", hw.store_seconds_per_neuron * 1e9);
    char overhead[64];
    std::snprintf(overhead, sizeof overhead, "%.3f", hw.store_token_overhead_seconds * 1e3);
    o << "# What the neuron store adds per active neuron with every record in memory, against\n"
      << "# the same model mapped; and per token, what that model mapped took beyond what the\n"
      << "# rates above predict (the planner adds it for this model only).\n"
      << "store:\n"
      << "  model: \"" << hw.store_model << "\"\n"
      << "  ns_per_neuron: " << buf << "\n"
      << "  overhead_ms_per_token: " << overhead << "\n";
  }
  return o.str();
}

Result<HardwareProfile> ParseHardwareProfile(const std::string& text, const std::string& where) {
  namespace y = yaml;
  SPARROW_ASSIGN_OR_RETURN(YAML::Node root, y::ParseMapping(text, where));
  HardwareProfile hw;
  SPARROW_ASSIGN_OR_RETURN(YAML::Node version, y::Child(root, "version", where, ""));
  SPARROW_ASSIGN_OR_RETURN(int64_t v, y::Integer(version, where, "version", 1, 1000));
  if (v != kVersion) {
    return y::FieldError(where, "version",
                         "is " + std::to_string(v) + "; this build reads version " +
                             std::to_string(kVersion) + " (run `sparrow profile-hw` again)");
  }
  SPARROW_ASSIGN_OR_RETURN(YAML::Node threads, y::Child(root, "max_threads", where, ""));
  SPARROW_ASSIGN_OR_RETURN(int64_t t, y::Integer(threads, where, "max_threads", 1, 1024));
  hw.max_threads = static_cast<int>(t);
  SPARROW_ASSIGN_OR_RETURN(YAML::Node mem, y::Child(root, "memory_gb_per_s", where, ""));
  SPARROW_ASSIGN_OR_RETURN(auto mem_list, y::PositiveList(mem, where, "memory_gb_per_s", t));
  hw.memory_bytes_per_s = Scaled(mem_list, kGB);
  SPARROW_ASSIGN_OR_RETURN(YAML::Node kernels, y::Child(root, "kernels", where, ""));
  if (!kernels.IsMap() || kernels.size() == 0) {
    return y::FieldError(where, "kernels", "must map weight types (q4_0, f16...) to their rates");
  }
  for (const auto& entry : kernels) {
    const std::string name = entry.first.as<std::string>("");
    auto type = TypeByName(name);
    if (!type) return y::FieldError(where, "kernels." + name, "is not a tensor type");
    KernelRate k;
    k.type = *type;
    const std::string path = "kernels." + name;
    SPARROW_ASSIGN_OR_RETURN(YAML::Node dense,
                             y::Child(entry.second, "dense_gb_per_s", where, path));
    SPARROW_ASSIGN_OR_RETURN(auto d, y::PositiveList(dense, where, path + ".dense_gb_per_s", t));
    SPARROW_ASSIGN_OR_RETURN(YAML::Node gather,
                             y::Child(entry.second, "gather_gb_per_s", where, path));
    SPARROW_ASSIGN_OR_RETURN(auto g, y::PositiveList(gather, where, path + ".gather_gb_per_s", t));
    k.dense_bytes_per_s = Scaled(d, kGB);
    k.gather_bytes_per_s = Scaled(g, kGB);
    hw.kernels.push_back(std::move(k));
  }
  // Flash is optional (a device with the whole model in memory never reads it).
  YAML::Node flash = root["flash"];
  if (flash.IsDefined() && !flash.IsNull()) {
    if (flash["file"].IsScalar()) hw.flash_file = flash["file"].Scalar();
    YAML::Node rates = flash["rates"];
    if (rates.IsDefined() && !rates.IsNull()) {
      if (!rates.IsSequence()) return y::FieldError(where, "flash.rates", "must be a list");
      for (size_t i = 0; i < rates.size(); ++i) {
        const std::string path = "flash.rates[" + std::to_string(i) + "]";
        FlashRate f;
        SPARROW_ASSIGN_OR_RETURN(YAML::Node b, y::Child(rates[i], "block_kib", where, path));
        SPARROW_ASSIGN_OR_RETURN(int64_t kib,
                                 y::Integer(b, where, path + ".block_kib", 1, 1 << 20));
        SPARROW_ASSIGN_OR_RETURN(YAML::Node d, y::Child(rates[i], "depth", where, path));
        SPARROW_ASSIGN_OR_RETURN(int64_t depth, y::Integer(d, where, path + ".depth", 1, 4096));
        SPARROW_ASSIGN_OR_RETURN(YAML::Node r, y::Child(rates[i], "mib_per_s", where, path));
        SPARROW_ASSIGN_OR_RETURN(double mib, y::Number(r, where, path + ".mib_per_s", true));
        f.block_bytes = static_cast<uint64_t>(kib) * 1024;
        f.queue_depth = static_cast<int>(depth);
        f.mib_per_s = mib;
        hw.flash.push_back(f);
      }
    }
  }
  // The store's cost is optional too (measured only with a converted model).
  YAML::Node store = root["store"];
  if (store.IsDefined() && !store.IsNull()) {
    if (store["model"].IsScalar()) hw.store_model = store["model"].Scalar();
    SPARROW_ASSIGN_OR_RETURN(YAML::Node ns, y::Child(store, "ns_per_neuron", where, "store"));
    SPARROW_ASSIGN_OR_RETURN(double v, y::Number(ns, where, "store.ns_per_neuron", false));
    if (v < 0 || v > 1e6) {
      return y::FieldError(where, "store.ns_per_neuron", "must be in [0, 1e6] nanoseconds");
    }
    hw.store_seconds_per_neuron = v * 1e-9;
    // Profiles written before the overhead was measured have none.
    if (store["overhead_ms_per_token"].IsDefined()) {
      SPARROW_ASSIGN_OR_RETURN(double ms, y::Number(store["overhead_ms_per_token"], where,
                                                    "store.overhead_ms_per_token", false));
      if (ms < 0 || ms > 1e6) {
        return y::FieldError(where, "store.overhead_ms_per_token", "must be in [0, 1e6] ms");
      }
      hw.store_token_overhead_seconds = ms * 1e-3;
    }
  }
  SPARROW_RETURN_IF_ERROR(ValidateHardwareProfile(hw, where));
  return hw;
}

Result<HardwareProfile> ReadHardwareProfile(const std::string& path) {
  Result<std::string> text = Env::Default()->ReadSmallFile(path);
  if (text.status().code() == StatusCode::kNotFound) {
    return NotFound(path +
                    ": cannot read the hardware profile (write it with `sparrow profile-hw`)");
  }
  if (!text.ok()) return text.status();
  return ParseHardwareProfile(*text, path);
}

Status WriteHardwareProfile(const HardwareProfile& hw, const std::string& path) {
  SPARROW_RETURN_IF_ERROR(ValidateHardwareProfile(hw, path));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return IoError(path + ": cannot open for writing");
  out << HardwareProfileToYaml(hw);
  out.close();
  if (!out) return IoError(path + ": write failed");
  return Status::Ok();
}

std::string DefaultHardwareProfilePath() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    return std::string(xdg) + "/sparrow/hw.yaml";
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    return std::string(home) + "/.cache/sparrow/hw.yaml";
  }
  return "";
}

}  // namespace sparrow::plan
