#pragma once
// Metrics: the server's counters and histograms, rendered in the Prometheus text exposition
// format together with a snapshot of the scheduler's gauges.
// Thread-safe: every method may be called from any thread.
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "engine/control/memory_governor.h"
#include "engine/sched/request.h"
#include "engine/sched/scheduler.h"
#include "server/core/latency_window.h"

namespace sparrow::server {

// A fixed-bucket histogram of seconds. Not thread-safe (Metrics guards it).
class SecondsHistogram {
 public:
  static constexpr std::array<double, 12> kBounds = {0.005, 0.01, 0.025, 0.05, 0.1,  0.25,
                                                     0.5,   1.0,  2.5,   5.0,  10.0, 30.0};
  void Observe(double seconds);
  // Appends the _bucket/_sum/_count lines of metric `name`.
  void Render(std::string_view name, std::string* out) const;
  int64_t count() const { return count_; }

 private:
  std::array<int64_t, kBounds.size()> buckets_{};  // non-cumulative
  int64_t count_ = 0;
  double sum_ = 0;
};

class Metrics {
 public:
  // One finished generation (one choice): its finish reason, tokens and time to first token.
  void RecordFinish(const FinishInfo& info);
  // Time between two consecutive tokens of one stream.
  void ObserveTbt(double seconds);
  // One answered HTTP or gRPC call, by status code ("200", "400", "OK", ...).
  void RecordResponse(std::string_view frontend, std::string_view code);

  // HTTP connections: opened/closed (the open gauge), refused at the max_connections cap, and
  // accept() failures for want of file descriptors (EMFILE/ENFILE).
  void ConnectionOpened() { ++connections_open_; }
  void ConnectionClosed() { --connections_open_; }
  void ConnectionRefused() { ++connections_refused_; }
  void AcceptFailedForFds() { ++accept_fd_errors_; }
  void TlsHandshakeFailed() { ++tls_handshake_failures_; }
  int64_t connections_open() const { return connections_open_.load(); }

  // A refused key check, by AuthDecision code ("invalid_api_key", ...).
  void CountAuthFailure(std::string_view code);
  // An admin action ("drain", "cancel", ...) and its result ("ok", "not_found", ...).
  void CountAdminAction(std::string_view action, std::string_view result);

  // Time to first token and time between tokens over the last `span`, in ms.
  Percentiles RecentTtft(std::chrono::seconds span) const;
  Percentiles RecentTbt(std::chrono::seconds span) const;

  // The whole exposition; `stats` supplies the gauges, `memory` (null without a budget
  // controller) the memory budget's.
  std::string Render(const SchedulerStats& stats,
                     const MemoryGovernorStats* memory = nullptr) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, int64_t> requests_by_status_;                 // finish reason
  std::map<std::pair<std::string, std::string>, int64_t> responses_;  // (frontend, code)
  int64_t prompt_tokens_ = 0;
  int64_t cached_prompt_tokens_ = 0;
  int64_t generated_tokens_ = 0;
  SecondsHistogram ttft_;
  SecondsHistogram tbt_;
  SecondsHistogram e2e_;
  LatencyWindow recent_ttft_, recent_tbt_;
  std::map<std::string, int64_t> auth_failures_;                          // by code
  std::map<std::pair<std::string, std::string>, int64_t> admin_actions_;  // (action, result)
  std::atomic<int64_t> connections_open_{0};
  std::atomic<int64_t> connections_refused_{0};
  std::atomic<int64_t> accept_fd_errors_{0};
  std::atomic<int64_t> tls_handshake_failures_{0};
};

}  // namespace sparrow::server
