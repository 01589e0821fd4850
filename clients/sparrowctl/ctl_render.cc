#include "clients/sparrowctl/ctl_render.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cstdio>

namespace sparrow::ctl {
namespace {

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

std::string Pad(std::string s, size_t n) {
  if (s.size() > n) return s.substr(0, n);
  return s + std::string(n - s.size(), ' ');
}

std::string Bar(double fraction, int width) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  const int full = static_cast<int>(fraction * width + 0.5);
  std::string out = "[";
  out.append(static_cast<size_t>(full), '#');
  out.append(static_cast<size_t>(width - full), '.');
  out += ']';
  return out;
}

std::string Age(double ms) {
  if (ms < 1000) return Fmt("%.0fms", ms);
  if (ms < 60000) return Fmt("%.1fs", ms / 1000);
  return Fmt("%.0fm", ms / 60000);
}

std::string Uptime(double s) {
  const int64_t t = static_cast<int64_t>(s);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%lldd %02lld:%02lld:%02lld", static_cast<long long>(t / 86400),
                static_cast<long long>(t / 3600 % 24), static_cast<long long>(t / 60 % 60),
                static_cast<long long>(t % 60));
  return buf;
}

std::string State(const admin::v1::ServerStatus& s) {
  if (s.drained()) return "drained";
  if (s.draining()) return "draining";
  return "serving";
}

}  // namespace

std::string ToJson(const google::protobuf::Message& m, bool pretty) {
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  o.add_whitespace = pretty;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  return out;
}

std::string HumanBytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return Fmt(u == 0 ? "%.0f " : "%.1f ", b) + units[u];
}

std::string RenderStatus(const admin::v1::ServerStatus& s) {
  std::string types;
  for (const auto& [name, n] : s.model().tensor_types()) {
    types += (types.empty() ? "" : ", ") + name + " x" + std::to_string(n);
  }
  const auto& t = s.throughput();
  const auto& kv = s.kv();
  std::string out;
  out += "sparrowd " + s.version() + "  " + State(s) + "  up " + Uptime(s.uptime_s()) + "  log " +
         s.log_level() + "\n";
  out += "model     " + s.model().id() + " (" + s.model().file() + ", " +
         HumanBytes(static_cast<double>(s.model().file_bytes())) + ", " + s.model().architecture() +
         ", n_ctx " + std::to_string(s.model().n_ctx()) + ")" +
         (s.model().state() == "sleeping" ? "  sleeping" : "") + "\n";
  out += "tensors   " + types + "\n";
  out += "requests  " + std::to_string(s.running()) + " running, " + std::to_string(s.waiting()) +
         " waiting; " + std::to_string(t.requests_finished()) + " finished, " +
         std::to_string(t.requests_cancelled()) + " cancelled, " +
         std::to_string(t.requests_failed()) + " failed\n";
  out += "tokens/s  " + Fmt("%.1f", t.tokens_per_s_10s()) + " (10 s), " +
         Fmt("%.1f", t.tokens_per_s_60s()) + " (1 min); " + std::to_string(t.generated_tokens()) +
         " generated\n";
  const auto& ttft = s.latency().ttft_ms();
  const auto& tbt = s.latency().tbt_ms();
  out += "ttft ms   p50 " + Fmt("%.1f", ttft.p50()) + "  p90 " + Fmt("%.1f", ttft.p90()) +
         "  p99 " + Fmt("%.1f", ttft.p99()) + "  (" + std::to_string(ttft.count()) +
         " in the last minute)\n";
  out += "tbt ms    p50 " + Fmt("%.1f", tbt.p50()) + "  p90 " + Fmt("%.1f", tbt.p90()) + "  p99 " +
         Fmt("%.1f", tbt.p99()) + "\n";
  out += "kv        " + std::to_string(kv.blocks_used()) + " used, " +
         std::to_string(kv.blocks_cached()) + " cached, " + std::to_string(kv.blocks_free()) +
         " free of " + std::to_string(kv.blocks_total()) + " blocks of " +
         std::to_string(kv.block_size()) + "; prefix hits " +
         Fmt("%.0f%%", 100 * kv.prefix_hit_rate()) + "\n";
  out += "ffn       " + s.sparse().mode() + ", " +
         Fmt("%.0f%%", 100 * s.sparse().active_fraction()) + " of neurons computed\n";
  // Speculative decoding: each source that drafted, with its acceptance.
  const auto& spec = s.speculative();
  std::string sources;
  for (const auto& src : spec.sources()) {
    if (src.drafted_tokens() == 0) continue;
    sources += (sources.empty() ? "; " : ", ") + src.source() + " " +
               std::to_string(src.accepted_tokens()) + " of " +
               std::to_string(src.drafted_tokens()) + " accepted (" +
               Fmt("%.0f%%", 100 * src.acceptance()) + ")";
  }
  if (spec.type() != "none" || !sources.empty()) {
    out += "spec      " + spec.type() +
           (spec.type() != "none" ? " (up to " + std::to_string(spec.draft_max()) + " a step)"
                                  : std::string()) +
           (sources.empty() ? "; nothing drafted yet" : sources) + "\n";
  }
  out += "memory    RSS " + HumanBytes(static_cast<double>(s.memory().rss_bytes())) +
         (s.memory().has_budget_bytes()
              ? " of " + HumanBytes(static_cast<double>(s.memory().budget_bytes()))
              : std::string()) +
         "; threads " + std::to_string(s.threads()) + "\n";
  return out;
}

std::string RenderMemory(const admin::v1::MemoryBudget& m) {
  auto b = [](uint64_t v) { return HumanBytes(static_cast<double>(v)); };
  std::string out = "budget    " + b(m.budget_bytes()) + " (ceiling " + b(m.ceiling_bytes()) +
                    ", floor " + b(m.floor_bytes()) + ", operator " +
                    (m.has_operator_budget_bytes() ? b(m.operator_budget_bytes()) : "none") + ")\n";
  const admin::v1::MemoryConsumers& c = m.consumers();
  out += "split     process " + b(c.process_bytes()) + ", weights " + b(c.weights_bytes()) +
         ", scratch " + b(c.scratch_bytes()) + ", KV pool " + b(c.kv_pool_bytes()) +
         ", neuron cache " + b(c.neuron_cache_bytes()) + "\n";
  const admin::v1::MemoryConsumers& h = m.held();
  out += "held      process " + b(h.process_bytes()) + ", weights " + b(h.weights_bytes()) +
         ", scratch " + b(h.scratch_bytes()) + ", KV pool " + b(h.kv_pool_bytes()) +
         ", neuron cache " + b(h.neuron_cache_bytes()) + ": " + b(m.held_bytes()) + " of RSS " +
         b(m.rss_bytes()) + "\n";
  out += "KV pool   " + std::to_string(m.kv_pool().used_blocks()) + " of " +
         std::to_string(m.kv_pool().blocks()) + " blocks used, " + b(m.kv_pool().mapped_bytes()) +
         " mapped\n";
  if (m.has_neuron_cache()) {
    out += "neurons   " + b(m.neuron_cache().resident_bytes()) + " held of " +
           b(m.neuron_cache().capacity_bytes()) + "\n";
  }
  std::string sources;
  for (const std::string& src : m.sources()) sources += (sources.empty() ? "" : ", ") + src;
  out += "pressure  " + m.pressure_level() +
         (m.starved() ? ", starved (the floor does not fit)" : "") + "; watching " +
         (sources.empty() ? "nothing" : sources) + "; " + std::to_string(m.shrinks()) +
         " shrinks, " + std::to_string(m.grows()) + " grows, " +
         std::to_string(m.operator_changes()) + " operator changes\n";
  out += "plan      v" + std::to_string(m.plan_version()) + " (applied v" +
         std::to_string(m.applied_plan_version()) + ", " + Fmt("%.1f ms", m.replan_latency_ms()) +
         " from decision to step)";
  if (m.has_sparsity()) out += ", sparsity " + Fmt("%.2f", m.sparsity());
  if (m.has_plan()) {
    const admin::v1::RunPlan& p = m.plan();
    std::string binding;
    for (const std::string& x : p.binding()) binding += (binding.empty() ? "" : ", ") + x;
    out += "\n          planner: " + std::to_string(p.threads()) + " threads, neuron cache " +
           b(p.neuron_cache_bytes()) + ", KV pool " + b(p.kv_pool_bytes()) + ", " +
           Fmt("%.2f tokens/s predicted", p.predicted_tokens_per_s()) +
           (binding.empty() ? "" : " (bound by " + binding + ")");
  } else if (!m.plan_error().empty()) {
    out += "\n          planner: no plan: " + m.plan_error();
  }
  return out + "\n";
}

std::string RenderShards(const admin::v1::Shards& s) {
  std::string out = Pad("DEVICE", 22) + Pad("LAYERS", 12) + Pad("LINK", 13) + Pad("STEPS", 9) +
                    Pad("FAILED", 8) + Pad("SENT/RECEIVED", 22) + "WORKER/WALL MS\n";
  for (const auto& p : s.placement()) {
    const admin::v1::ShardLink* link = nullptr;
    for (const auto& l : s.links()) {
      if (l.address() == p.device() && l.first_layer() == p.first_layer()) link = &l;
    }
    out += Pad(p.device(), 22) +
           Pad(std::to_string(p.first_layer()) + ".." + std::to_string(p.end_layer() - 1), 12);
    if (link) {
      out += Pad(link->connected() ? "connected" : "reconnecting", 13) +
             Pad(std::to_string(link->steps()), 9) + Pad(std::to_string(link->failures()), 8) +
             Pad(HumanBytes(static_cast<double>(link->bytes_sent())) + " / " +
                     HumanBytes(static_cast<double>(link->bytes_received())),
                 22) +
             Fmt("%.0f", link->worker_ms()) + " / " + Fmt("%.0f", link->wall_ms()) + "\n";
      if (!link->last_error().empty()) out += "    last error: " + link->last_error() + "\n";
    } else {
      out += "this device\n";
    }
    if (!p.slice().empty()) out += "    slice of each layer: " + p.slice() + "\n";
  }
  if (!s.devices_down().empty()) {
    out += "down:";
    for (const auto& d : s.devices_down()) out += " " + d;
    out += "\n";
  }
  if (s.replans() > 0) out += "placed again " + std::to_string(s.replans()) + " times\n";
  if (!s.description().empty()) out += "\n" + s.description();
  return out;
}

std::string RenderRequests(const google::protobuf::RepeatedPtrField<admin::v1::RequestInfo>& rs) {
  if (rs.empty()) return "no requests\n";
  std::string out = Pad("ID", 10) + Pad("STATE", 9) + Pad("AGE", 8) + Pad("PROMPT", 8) +
                    Pad("GEN/MAX", 12) + Pad("FRONTEND", 22) + Pad("CLIENT", 24) + "KEY\n";
  for (const auto& r : rs) {
    out += Pad(r.id(), 10) + Pad(r.cancelling() ? "cancel" : r.state(), 9) +
           Pad(Age(r.age_ms()), 8) + Pad(std::to_string(r.prompt_tokens()), 8) +
           Pad(std::to_string(r.generated_tokens()) + "/" + std::to_string(r.max_tokens()), 12) +
           Pad(r.frontend() + " " + r.route(), 22) + Pad(r.remote(), 24) + r.key_id() + "\n";
    if (r.has_prompt()) out += "    prompt: " + r.prompt() + "\n";
  }
  return out;
}

std::string RenderWatch(const admin::v1::ServerStatus& s, const std::string& target, int width) {
  const int bar = std::max(10, std::min(50, width - 40));
  const auto& kv = s.kv();
  const double kv_total = static_cast<double>(std::max<int64_t>(1, kv.blocks_total()));
  std::string out = "\x1b[H\x1b[2J";  // home, clear
  out += "sparrowctl watch " + target + "   (Ctrl-C to quit)\n\n";
  out += RenderStatus(s);
  out += "\nKV used   " + Bar(static_cast<double>(kv.blocks_used()) / kv_total, bar) + " " +
         Fmt("%.0f%%", 100 * kv.blocks_used() / kv_total) + "\n";
  out += "KV cached " + Bar(static_cast<double>(kv.blocks_cached()) / kv_total, bar) + " " +
         Fmt("%.0f%%", 100 * kv.blocks_cached() / kv_total) + "\n";
  if (s.memory().has_budget_bytes() && s.memory().budget_bytes() > 0) {
    const double f = static_cast<double>(s.memory().rss_bytes()) /
                     static_cast<double>(s.memory().budget_bytes());
    out += "memory    " + Bar(f, bar) + " " + Fmt("%.0f%%", 100 * f) + "\n";
  }
  out += "\n";
  out += RenderRequests(s.requests());
  return out;
}

}  // namespace sparrow::ctl
