// sparrowd: loads the configuration and the model, starts the scheduler and the HTTP (and,
// when built in, gRPC) frontends, and shuts down gracefully on SIGTERM/SIGINT.
#include <malloc.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "config/config_loader.h"
#include "server/admin/admin_controller.h"
#include "server/core/server_context.h"
#include "server/core/service_watchdog.h"
#include "server/core/systemd_notify.h"
#include "server/http/http_server.h"
#ifdef SPARROW_HAVE_GRPC
#include "server/grpc/grpc_server.h"
#include "server/shard/connect_workers.h"
#include "server/shard/worker_server.h"
#endif

namespace {

constexpr int kExitConfig = 2;
constexpr int kExitStartup = 1;

void SetUpLogging(const sparrow::ServerConfig& c) {
  if (c.log_format == "json") {
    // Each message is already a JSON object (request lines) or gets wrapped as one.
    spdlog::set_pattern(R"({"time":"%Y-%m-%dT%H:%M:%S.%e","level":"%l","msg":%v})");
  } else {
    spdlog::set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] %v");
  }
  spdlog::set_level(spdlog::level::from_str(c.log_level));
}

// In JSON mode plain messages must be JSON strings.
std::string Msg(const sparrow::ServerConfig& c, const std::string& text) {
  if (c.log_format != "json") return text;
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

// The service manager not hearing a state is worth a warning, not a stop: it acts on its own
// timeouts.
void Notify(const sparrow::ServerConfig& c, const sparrow::server::SystemdNotifier& notify,
            const std::string& state) {
  if (sparrow::Status st = notify.Send(state); !st.ok()) spdlog::warn(Msg(c, st.ToString()));
}

int WaitForSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

#ifdef SPARROW_HAVE_GRPC
// sparrowd --worker: computes layers for a coordinator until SIGTERM/SIGINT.
int RunWorker(const sparrow::ServerConfig& config, const sparrow::server::SystemdNotifier& notify) {
  auto worker = sparrow::server::WorkerServer::Start(config);
  if (!worker.ok()) {
    std::fprintf(stderr, "sparrowd: %s\n", worker.status().ToString().c_str());
    return worker.status().code() == sparrow::StatusCode::kInvalidArgument ? kExitConfig
                                                                           : kExitStartup;
  }
  spdlog::info(Msg(config, "worker for " + config.model + " (" +
                               std::to_string((*worker)->n_layer()) + " layers, digest " +
                               (*worker)->digest() + ")" +
                               (config.tls_cert.empty() ? "" : ", TLS")));
  // The exact line scripts wait for.
  std::printf("sparrowd: worker listening on %s\n",
              sparrow::server::JoinHostPort(config.host, (*worker)->port()).c_str());
  std::fflush(stdout);
  // A worker has no scheduler of its own: the pings say the process is still there.
  Notify(config, notify, "READY=1");
  sparrow::server::ServiceWatchdog watchdog(notify, [](std::string*) { return true; });
  const int sig = WaitForSignal();
  Notify(config, notify, "STOPPING=1");
  spdlog::info(Msg(config, std::string("received ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") +
                               ", stopping the worker"));
  (*worker)->Shutdown();
  return 0;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  // Block the signals in every thread; the main thread waits for them with sigwait.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // Large response bodies and buffers are mmapped and unmapped on free, so memory a slow or
  // abandoned client held is given back to the system. Without a fixed threshold glibc raises
  // it after the first large free and later ones stay in the heap.
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);

  std::vector<std::string> args(argv + 1, argv + argc);
  auto loaded = sparrow::LoadServerConfig(args, [](const char* n) { return std::getenv(n); });
  if (!loaded.ok()) {
    std::fprintf(stderr, "sparrowd: %s\n", loaded.status().message().c_str());
    return kExitConfig;
  }
  if (loaded->exit_now) {
    std::fputs(loaded->message.c_str(), stdout);
    return 0;
  }
  const sparrow::ServerConfig& config = loaded->config;
  SetUpLogging(config);
  // Run by systemd as Type=notify (deploy/sparrowd.service): READY=1 once serving, WATCHDOG=1
  // while the scheduler makes progress, STOPPING=1 on SIGTERM.
  auto notify = sparrow::server::SystemdNotifier::FromEnvironment(
      [](const char* name) { return std::getenv(name); });
  if (!notify.ok()) {
    std::fprintf(stderr, "sparrowd: %s\n", notify.status().message().c_str());
    return kExitConfig;
  }

  if (config.worker != 0) {
#ifdef SPARROW_HAVE_GRPC
    return RunWorker(config, *notify);
#else
    std::fprintf(stderr, "sparrowd: --worker needs gRPC, and this sparrowd was built without it\n");
    return kExitConfig;
#endif
  }
#ifdef SPARROW_HAVE_GRPC
  auto ctx_or = sparrow::server::CreateServerContext(config, sparrow::server::ConnectWorkers);
#else
  auto ctx_or = sparrow::server::CreateServerContext(config);
#endif
  if (!ctx_or.ok()) {
    std::fprintf(stderr, "sparrowd: %s\n", ctx_or.status().ToString().c_str());
    return ctx_or.status().code() == sparrow::StatusCode::kInvalidArgument ? kExitConfig
                                                                           : kExitStartup;
  }
  auto& ctx = **ctx_or;
  // Released once described below: a reload must be able to free it.
  std::shared_ptr<sparrow::server::ServedModel> first = ctx.served();
  for (const auto& w : first->tokenizer->warnings()) {
    spdlog::warn(Msg(config, "tokenizer: " + w));
  }
  auto admin = sparrow::server::AdminController::Start(ctx);
  if (!admin.ok()) {
    std::fprintf(stderr, "sparrowd: %s\n", admin.status().message().c_str());
    return kExitConfig;
  }
  ctx.admin = std::move(*admin);
  if (ctx.auth->admin_enabled()) {
    spdlog::info(Msg(config, "admin API on (/admin/v1/, gRPC sparrow.admin.v1.Admin)"));
  }

  auto http =
      sparrow::server::HttpServer::Start(ctx, sparrow::server::HttpOptionsFromConfig(config));
  if (!http.ok()) {
    std::fprintf(stderr, "sparrowd: %s\n", http.status().message().c_str());
    return kExitStartup;
  }
  spdlog::info(Msg(config, "model '" + first->model_id + "' from " + first->path + ", n_ctx " +
                               std::to_string(first->n_ctx) + ", chat template " +
                               (first->chat->has_jinja()
                                    ? std::string("Jinja (the model's own or chat_template_file)")
                                    : ChatTemplateName(first->chat->family()))));
  if (first->workers) {
    spdlog::info(Msg(
        config, "layers placed across devices:\n" + first->workers->topology->view().description));
  }
  first.reset();
  if (!config.models_dir.empty()) {
    spdlog::info(Msg(config, "serving the models of " + config.models_dir +
                                 " on demand, one at a time (a request's \"model\" loads it)"));
  } else if (!config.model_dir.empty()) {
    spdlog::info(Msg(config, "admin reload may switch to the models in " + config.model_dir));
  }
  if (config.sleep_idle_seconds > 0) {
    spdlog::info(Msg(config, "the model is unloaded after " +
                                 std::to_string(config.sleep_idle_seconds) +
                                 " s idle and loaded again by the next request"));
  }
  const bool tls = !config.tls_cert.empty();
  if (tls) {
    spdlog::info(Msg(config, "TLS on for HTTP and gRPC with certificate " + config.tls_cert));
  } else if (config.allow_insecure != 0 && !sparrow::IsLoopbackHost(config.host)) {
    // Said on every start, at the top level, because it is easy to leave on by mistake.
    spdlog::warn(Msg(config, "INSECURE: serving " + config.host +
                                 " without TLS (--allow-insecure): API and admin keys, prompts "
                                 "and answers cross the network in clear text; anyone on it can "
                                 "read them. Set tls_cert and tls_key to fix this"));
  }
  // The exact line scripts wait for.
  std::printf("sparrowd: HTTP listening on %s://%s\n", tls ? "https" : "http",
              sparrow::server::JoinHostPort(config.host, (*http)->port()).c_str());

#ifdef SPARROW_HAVE_GRPC
  std::unique_ptr<sparrow::server::GrpcServer> grpc;
  if (config.grpc_port >= 0) {
    auto g = sparrow::server::StartGrpcServer(
        ctx, sparrow::server::JoinHostPort(config.host, static_cast<int>(config.grpc_port)),
        config.tls_cert, config.tls_key);
    if (!g.ok()) {
      std::fprintf(stderr, "sparrowd: %s\n", g.status().message().c_str());
      return kExitStartup;
    }
    grpc = std::move(*g);
    std::printf("sparrowd: gRPC listening on %s%s\n",
                sparrow::server::JoinHostPort(config.host, grpc->port()).c_str(),
                tls ? " (TLS)" : "");
  }
#endif
  std::fflush(stdout);
  // The model is loaded and every frontend listens: clients may come.
  Notify(config, *notify, "READY=1");
  sparrow::server::ServiceWatchdog watchdog(
      *notify, sparrow::server::SchedulerProgress(ctx, notify->watchdog_interval()));

  const int sig = WaitForSignal();
  Notify(config, *notify, "STOPPING=1");
  spdlog::info(Msg(config, std::string("received ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") +
                               ", shutting down"));
  // Running requests get shutdown_timeout_ms; then the scheduler cancels what is left, which
  // ends every stream with finish_reason "cancelled". The margin is for writing those last
  // answers; gRPC's own deadline comes after ours so that its calls end through the scheduler,
  // and it runs alongside: gRPC's Shutdown waits for its calls, which wait for the scheduler.
  const auto deadline = std::chrono::milliseconds(config.shutdown_timeout_ms);
  constexpr auto kFlushMargin = std::chrono::milliseconds(1500);
  ctx.admin->CloseWatchers();
  (*http)->BeginShutdown();
#ifdef SPARROW_HAVE_GRPC
  std::thread grpc_stop;
  if (grpc) grpc_stop = std::thread([&] { grpc->Shutdown(deadline + kFlushMargin); });
#endif
  // No model is loaded or woken from here on; what serves finishes.
  ctx.switcher->Stop();
  if (const auto served = ctx.served()) served->scheduler->Shutdown(deadline);
  if (!(*http)->WaitForResponses(kFlushMargin)) {
    spdlog::warn(Msg(config, "some HTTP responses were not completely written before exit"));
  }
#ifdef SPARROW_HAVE_GRPC
  if (grpc_stop.joinable()) grpc_stop.join();
#endif
  (*http)->Stop();
  spdlog::info(Msg(config, "stopped"));
  return 0;
}
