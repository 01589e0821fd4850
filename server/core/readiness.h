#pragma once
// Readiness: whether sparrowd admits new generations now, for a balancer's health check
// (HAProxy's `option httpchk GET /ready`, a Kubernetes readinessProbe). /health says the
// process is alive; /ready says a request sent now would be taken: it is false while the
// operator drains, while a reload swaps the model, while the memory budget is starved and
// work holds its floor, and while the queue is full.
#include <string>

namespace sparrow::server {

struct ServerContext;

struct Readiness {
  bool ready = true;
  std::string reason;  // "", "draining", "reloading", "memory_starved", "queue_full"
  std::string detail;  // for a person reading the probe's body
};

Readiness ReadinessOf(const ServerContext& ctx);

}  // namespace sparrow::server
