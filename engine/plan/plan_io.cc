#include "engine/plan/plan_io.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/common/env.h"
#include "engine/plan/yaml_fields.h"

namespace sparrow::plan {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::string Line(const char* key, const std::string& value, const char* comment) {
  std::string s = std::string(key) + ": " + value;
  if (s.size() < 34) s.resize(34, ' ');
  return s + "  # " + comment + "\n";
}

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// Bytes as MiB with enough digits to give the same byte count back (to the byte below 2^50).
std::string Mib(size_t bytes) {
  return Fmt("%.6f", static_cast<double>(bytes) / kMiB);
}

size_t MibToBytes(double mib) {
  return static_cast<size_t>(std::llround(mib * kMiB));
}

bool KnownConstraint(const std::string& name) {
  for (const char* c : {constraint::kBudget, constraint::kThreads, constraint::kMinSpeed,
                        constraint::kMaxSparsity, constraint::kMinKv}) {
    if (name == c) return true;
  }
  return false;
}

}  // namespace

std::string PlanToYaml(const RunPlan& p) {
  std::string binding = "[";
  for (size_t i = 0; i < p.binding.size(); ++i) binding += (i ? ", " : "") + p.binding[i];
  binding += "]";
  std::string o =
      "# Sparrow run plan (sparrow plan): the choices, then what the cost model predicts.\n";
  o += Line("objective", p.objective, "speed: most tokens/s; memory: least memory at the floor");
  o += Line("threads", std::to_string(p.threads), "compute threads");
  o += Line("neuron_cache_mib", Mib(p.neuron_cache_bytes), "hot segment + LRU (--cache-mb)");
  o += Line("kv_pool_mib", Mib(p.kv_pool_bytes), "paged KV cache");
  o += Line("sparsity", Fmt("%.4f", p.sparsity), "share of FFN neurons skipped per token");
  o += "# Predicted\n";
  o += Line("predicted_tokens_per_s", Fmt("%.4f", p.predicted_tokens_per_s), "decode, batch 1");
  o += Line("predicted_ms_per_token", Fmt("%.4f", p.predicted_ms_per_token),
            "dense + max(FFN rows, flash + missed rows)");
  o += Line("dense_ms", Fmt("%.4f", p.dense_ms), "attention, output, predictors, gate");
  o += Line("ffn_compute_ms", Fmt("%.4f", p.ffn_compute_ms), "active neurons' rows");
  o += Line("flash_ms", Fmt("%.4f", p.flash_ms),
            "misses read from flash (rows in memory overlap it)");
  o += Line("flash_mib_per_token", Fmt("%.4f", p.flash_mib_per_token), "read from flash per token");
  o += Line("cache_fraction", Fmt("%.4f", p.cache_fraction), "of all neuron bundles");
  o += Line("miss_rate", Fmt("%.4f", p.miss_rate), "share of active neurons read from flash");
  o += Line("active_share", Fmt("%.4f", p.active_share), "share of FFN neurons computed");
  o += Line("memory_mib", Mib(p.memory_bytes), "resident + cache + KV + scratch");
  o += Line("budget_mib", Mib(p.budget_bytes), "what the plan was made for");
  o += Line("binding", binding, "constraints that limit the objective");
  return o;
}

std::string PlanToJson(const RunPlan& p) {
  nlohmann::json j = {
      {"objective", p.objective},
      {"threads", p.threads},
      {"neuron_cache_bytes", p.neuron_cache_bytes},
      {"kv_pool_bytes", p.kv_pool_bytes},
      {"sparsity", p.sparsity},
      {"predicted_tokens_per_s", p.predicted_tokens_per_s},
      {"predicted_ms_per_token", p.predicted_ms_per_token},
      {"dense_ms", p.dense_ms},
      {"ffn_compute_ms", p.ffn_compute_ms},
      {"flash_ms", p.flash_ms},
      {"flash_mib_per_token", p.flash_mib_per_token},
      {"cache_fraction", p.cache_fraction},
      {"miss_rate", p.miss_rate},
      {"active_share", p.active_share},
      {"memory_bytes", p.memory_bytes},
      {"budget_bytes", p.budget_bytes},
      {"binding", p.binding},
      {"solve_ms", p.solve_ms},
  };
  return j.dump(2);
}

Result<RunPlan> ParsePlan(const std::string& text, const std::string& where) {
  namespace y = yaml;
  SPARROW_ASSIGN_OR_RETURN(YAML::Node root, y::ParseMapping(text, where));
  RunPlan p;
  auto number = [&](const char* key, bool required, bool positive, double* out) -> Status {
    YAML::Node n = root[key];
    if (!n.IsDefined() || n.IsNull()) {
      return required ? y::FieldError(where, key, "missing") : Status::Ok();
    }
    auto v = y::Number(n, where, key, positive);
    if (!v.ok()) return v.status();
    if (*v < 0) return y::FieldError(where, key, "must not be negative");
    *out = *v;
    return Status::Ok();
  };
  SPARROW_ASSIGN_OR_RETURN(YAML::Node threads, y::Child(root, "threads", where, ""));
  SPARROW_ASSIGN_OR_RETURN(int64_t t, y::Integer(threads, where, "threads", 1, 1024));
  p.threads = static_cast<int>(t);
  double cache = 0, kv = 0, memory = 0, budget = 0;
  SPARROW_RETURN_IF_ERROR(number("neuron_cache_mib", true, false, &cache));
  SPARROW_RETURN_IF_ERROR(number("kv_pool_mib", true, false, &kv));
  SPARROW_RETURN_IF_ERROR(number("sparsity", true, false, &p.sparsity));
  if (p.sparsity >= 1) return y::FieldError(where, "sparsity", "must be below 1");
  p.neuron_cache_bytes = MibToBytes(cache);
  p.kv_pool_bytes = MibToBytes(kv);
  SPARROW_RETURN_IF_ERROR(number("predicted_tokens_per_s", false, true, &p.predicted_tokens_per_s));
  SPARROW_RETURN_IF_ERROR(number("predicted_ms_per_token", false, true, &p.predicted_ms_per_token));
  SPARROW_RETURN_IF_ERROR(number("dense_ms", false, false, &p.dense_ms));
  SPARROW_RETURN_IF_ERROR(number("ffn_compute_ms", false, false, &p.ffn_compute_ms));
  SPARROW_RETURN_IF_ERROR(number("flash_ms", false, false, &p.flash_ms));
  SPARROW_RETURN_IF_ERROR(number("flash_mib_per_token", false, false, &p.flash_mib_per_token));
  SPARROW_RETURN_IF_ERROR(number("cache_fraction", false, false, &p.cache_fraction));
  SPARROW_RETURN_IF_ERROR(number("miss_rate", false, false, &p.miss_rate));
  SPARROW_RETURN_IF_ERROR(number("active_share", false, false, &p.active_share));
  SPARROW_RETURN_IF_ERROR(number("memory_mib", false, false, &memory));
  SPARROW_RETURN_IF_ERROR(number("budget_mib", false, false, &budget));
  p.memory_bytes = MibToBytes(memory);
  p.budget_bytes = MibToBytes(budget);
  if (p.cache_fraction > 1) return y::FieldError(where, "cache_fraction", "must be at most 1");
  if (p.miss_rate > 1) return y::FieldError(where, "miss_rate", "must be at most 1");
  if (YAML::Node o = root["objective"]; o.IsDefined() && !o.IsNull()) {
    p.objective = o.as<std::string>("");
    if (p.objective != "speed" && p.objective != "memory") {
      return y::FieldError(where, "objective",
                           "must be speed or memory, got '" + p.objective + "'");
    }
  }
  if (YAML::Node b = root["binding"]; b.IsDefined() && !b.IsNull()) {
    if (!b.IsSequence()) return y::FieldError(where, "binding", "must be a list of names");
    for (size_t i = 0; i < b.size(); ++i) {
      const std::string name = b[i].as<std::string>("");
      if (!KnownConstraint(name)) {
        return y::FieldError(where, "binding[" + std::to_string(i) + "]",
                             "'" + name + "' is not a constraint of the planner");
      }
      p.binding.push_back(name);
    }
  }
  if (p.budget_bytes > 0 && p.memory_bytes > p.budget_bytes) {
    return y::FieldError(where, "memory_mib", "is over budget_mib: the plan does not fit");
  }
  return p;
}

Result<RunPlan> ReadPlan(const std::string& path) {
  Result<std::string> text = Env::Default()->ReadSmallFile(path);
  if (text.status().code() == StatusCode::kNotFound)
    return NotFound(path + ": cannot read the plan");
  if (!text.ok()) return text.status();
  return ParsePlan(*text, path);
}

}  // namespace sparrow::plan
