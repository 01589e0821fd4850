// sparrowctl: watch and steer a running sparrowd from another machine, over gRPC.
#include <fcntl.h>
#include <grpc/support/log.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "clients/sparrowctl/byte_size.h"
#include "clients/sparrowctl/ctl_client.h"
#include "clients/sparrowctl/ctl_config.h"
#include "clients/sparrowctl/ctl_render.h"
#include "clients/sparrowctl/self_signed_cert.h"
#include "config/version.h"

namespace {

using namespace sparrow;
namespace adminpb = sparrow::admin::v1;

constexpr int kExitFailed = 1;  // the server refused or could not be reached
constexpr int kExitUsage = 2;

constexpr const char* kDescription =
    "sparrowctl: remote control for sparrowd over gRPC.\n"
    "\n"
    "  sparrowctl --host 192.168.1.20 --ca sparrow.crt --key-file admin.keys status\n"
    "\n"
    "The admin key is a key of the server's admin_key_file (or its admin_key). Give a file\n"
    "holding it (a line 'name key' or the key alone) with --key-file or SPARROW_ADMIN_KEY_FILE,\n"
    "or the key itself in SPARROW_ADMIN_KEY. --ca is the server's certificate (its tls_cert;\n"
    "`sparrowctl cert` on the device makes one). Global flags go before or after the command.\n"
    "Exit codes: 0 done, 1 the server refused or was unreachable (the message says why), 2 bad\n"
    "usage.\n";

// Writes `text` to `path`, readable by its owner only when `secret`.
bool WriteFile(const std::string& path, const std::string& text, bool secret, std::string* error) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, secret ? 0600 : 0644);
  if (fd < 0) {
    *error = "cannot write '" + path + "': " + std::strerror(errno);
    return false;
  }
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!ok) *error = "cannot write '" + path + "'";
  return ok;
}

int ListDevices(const ctl::CtlConfig& config, const std::string& path, bool json) {
  if (json) {
    nlohmann::json devices = nlohmann::json::array();
    for (const auto& [name, d] : config.devices) {
      devices.push_back({{"name", name},
                         {"host", d.host},
                         {"port", d.port != 0 ? d.port : 50051},
                         {"tls", !d.ca.empty()}});
    }
    const nlohmann::json out = {
        {"config", path}, {"default", config.default_device}, {"devices", devices}};
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  if (config.devices.empty()) {
    std::printf("no devices in %s\n", path.c_str());
    return 0;
  }
  for (const auto& [name, d] : config.devices) {
    std::printf("%s %-16s %s:%d%s\n", name == config.default_device ? "*" : " ", name.c_str(),
                d.host.c_str(), d.port != 0 ? d.port : 50051, d.ca.empty() ? "" : "  (TLS)");
  }
  return 0;
}

int MakeCert(const std::string& dir, ctl::CertRequest req, bool json) {
  const std::string host = ctl::LocalHostName();
  if (!host.empty()) req.dns_names.insert(req.dns_names.begin(), host);
  for (const auto& ip : ctl::LocalAddresses()) req.ips.push_back(ip);
  ctl::CertPem pem;
  std::string error;
  const std::string cert_path = dir + "/sparrow.crt", key_path = dir + "/sparrow.key";
  if (!ctl::MakeSelfSignedCert(req, &pem, &error) ||
      !WriteFile(key_path, pem.private_key, /*secret=*/true, &error) ||
      !WriteFile(cert_path, pem.certificate, /*secret=*/false, &error)) {
    std::fprintf(stderr, "sparrowctl: cert: %s\n", error.c_str());
    return kExitUsage;
  }
  if (json) {
    std::printf("{\"certificate\":\"%s\",\"key\":\"%s\"}\n", cert_path.c_str(), key_path.c_str());
    return 0;
  }
  std::string names;
  for (const auto& n : req.dns_names) names += " " + n;
  for (const auto& ip : req.ips) names += " " + ip;
  std::printf(
      "wrote %s (certificate, valid %d days, for:%s and localhost)\n"
      "  and %s (its private key, mode 0600)\n"
      "Serve with:   sparrowd --tls-cert %s --tls-key %s ...\n"
      "Copy %s to the laptop and connect with: sparrowctl --ca sparrow.crt --host <address> ...\n",
      cert_path.c_str(), req.days, names.c_str(), key_path.c_str(), cert_path.c_str(),
      key_path.c_str(), cert_path.c_str());
  return 0;
}

int Fail(ctl::CtlClient& c, const grpc::Status& s) {
  std::fprintf(stderr, "sparrowctl: %s\n", c.Explain(s).c_str());
  return kExitFailed;
}

int Print(const google::protobuf::Message& m, bool json, const std::string& human) {
  std::fputs(json ? (ctl::ToJson(m, true) + "\n").c_str() : human.c_str(), stdout);
  return 0;
}

// One unary admin call: the admin key and, unless the call is slow, a deadline; the answer
// printed as JSON or as human(answer).
template <class Response, class Call, class Human>
int AdminCall(ctl::CtlClient& c, bool json, Call call, Human human, bool with_deadline = true) {
  grpc::ClientContext ctx;
  c.Prepare(&ctx, /*admin=*/true, with_deadline);
  Response r;
  const grpc::Status st = call(&ctx, &r);
  return st.ok() ? Print(r, json, human(r)) : Fail(c, st);
}

int TerminalWidth() {
  winsize w{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0) return w.ws_col;
  return 100;
}

int Watch(ctl::CtlClient& c, bool json, int count) {
  grpc::ClientContext ctx;
  c.Prepare(&ctx, /*admin=*/true, /*with_deadline=*/false);
  adminpb::WatchEventsRequest req;
  auto reader = c.admin().WatchEvents(&ctx, req);
  adminpb::Event e;
  const std::string target = c.target().host + ":" + std::to_string(c.target().port);
  std::string last_action;
  int seen = 0;
  while (reader->Read(&e)) {
    if (json) {
      std::fputs((ctl::ToJson(e, false) + "\n").c_str(), stdout);
      std::fflush(stdout);
    } else if (e.has_action()) {
      last_action = e.action().action() + " " + e.action().args_json() + " -> " +
                    e.action().result() + " (" + e.action().key_id() + ")";
    } else if (e.has_status()) {
      std::string screen = ctl::RenderWatch(e.status(), target, TerminalWidth());
      if (!last_action.empty()) screen += "\nlast action: " + last_action + "\n";
      std::fputs(screen.c_str(), stdout);
      std::fflush(stdout);
    }
    if (count > 0 && ++seen >= count) {
      ctx.TryCancel();
      break;
    }
  }
  const grpc::Status s = reader->Finish();
  if (!s.ok() && s.error_code() != grpc::StatusCode::CANCELLED) return Fail(c, s);
  return 0;
}

int Generate(ctl::CtlClient& c, const std::string& prompt, int max_tokens, bool chat, bool json) {
  grpc::ClientContext ctx;
  c.Prepare(&ctx, /*admin=*/false, /*with_deadline=*/false);
  std::unique_ptr<grpc::ClientReader<v1::GenerateResponse>> reader;
  if (chat) {
    v1::ChatRequest req;
    auto* m = req.add_messages();
    m->set_role("user");
    m->set_content(prompt);
    if (max_tokens > 0) req.mutable_options()->set_max_tokens(max_tokens);
    reader = c.inference().Chat(&ctx, req);
  } else {
    v1::GenerateRequest req;
    req.set_prompt(prompt);
    if (max_tokens > 0) req.mutable_options()->set_max_tokens(max_tokens);
    reader = c.inference().Generate(&ctx, req);
  }
  v1::GenerateResponse r;
  while (reader->Read(&r)) {
    if (json) {
      std::fputs((ctl::ToJson(r, false) + "\n").c_str(), stdout);
    } else {
      // A chat's thinking goes to stderr, apart from the answer; tool calls one per line.
      std::fputs(r.reasoning().c_str(), stderr);
      std::fputs(r.text().c_str(), stdout);
      for (const v1::ToolCall& call : r.tool_calls()) {
        std::printf("\n[tool call %s: %s(%s)]\n", call.id().c_str(), call.name().c_str(),
                    call.arguments().c_str());
      }
    }
    std::fflush(stdout);
    if (!json && r.has_usage()) {
      std::fprintf(stderr, "\n[%s, %lld prompt + %lld generated tokens, ttft %.0f ms]\n",
                   v1::FinishReason_Name(r.finish_reason()).c_str(),
                   static_cast<long long>(r.usage().prompt_tokens()),
                   static_cast<long long>(r.usage().completion_tokens()), r.timings().ttft_ms());
    }
  }
  const grpc::Status s = reader->Finish();
  return s.ok() ? 0 : Fail(c, s);
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  // gRPC's own log lines (a failed TLS handshake, a refused connection) would print beside the
  // one message sparrowctl gives for the same failure; setting GRPC_VERBOSITY brings them back.
  if (std::getenv("GRPC_VERBOSITY") == nullptr) gpr_set_log_function([](gpr_log_func_args*) {});
  CLI::App app(kDescription, "sparrowctl");
  app.set_version_flag("--version", std::string("sparrowctl ") + kSparrowVersion);
  app.require_subcommand(1);
  // Global flags after the subcommand too (`sparrowctl status --json`): subcommands inherit it.
  app.fallthrough();
  ctl::Target t;
  const char* env_host = std::getenv("SPARROW_HOST");
  if (env_host != nullptr) t.host = env_host;
  std::string key_file, api_key_file, config_file, device;
  bool json = false;
  app.add_option("--device", device,
                 "A device of the config file (env SPARROW_DEVICE; default: its 'default')");
  app.add_option(
      "--config", config_file,
      "Device list (default: " + ctl::DefaultCtlConfigPath() + "; env SPARROW_CTL_CONFIG)");
  auto* host_opt = app.add_option("--host", t.host, "sparrowd's address (env SPARROW_HOST)")
                       ->capture_default_str();
  auto* port_opt = app.add_option("--port", t.port, "sparrowd's gRPC port")->capture_default_str();
  app.add_option("--key-file", key_file,
                 "File holding the admin key, as a line 'name key' or the key alone (env "
                 "SPARROW_ADMIN_KEY_FILE: the file's path; SPARROW_ADMIN_KEY: the key itself)");
  app.add_option("--api-key-file", api_key_file,
                 "File holding an inference key, for generate/chat (env SPARROW_API_KEY_FILE: "
                 "the file's path; SPARROW_API_KEY: the key itself)");
  auto* timeout_opt =
      app.add_option("--timeout-ms", t.timeout_ms, "Deadline of each call")->capture_default_str();
  app.add_option("--ca", t.ca_file,
                 "TLS: trust this certificate (the server's tls_cert) (env SPARROW_CA)");
  app.add_flag("--tls", t.tls, "TLS with the system's trusted roots (a CA-signed server)");
  app.add_flag("--json", json, "Print JSON (proto field names) instead of tables");

  app.add_subcommand("status", "Model, uptime, requests, tokens/s, latency, KV cache, memory");
  auto* requests = app.add_subcommand("requests", "List running and waiting requests");
  bool with_prompt = false;
  requests->add_flag("--prompt", with_prompt, "Show prompts too (recorded in the audit log)");
  auto* cancel = app.add_subcommand("cancel", "Cancel a request by id (see: requests)");
  std::string cancel_id;
  cancel->add_option("id", cancel_id, "Request id, e.g. req-12")->required();
  auto* drain = app.add_subcommand("drain", "Stop admitting; running requests finish");
  bool wait = false;
  drain->add_flag("--wait", wait, "Return once nothing is running or waiting");
  app.add_subcommand("resume", "Admit requests again after drain");
  auto* level = app.add_subcommand("log-level", "Set the server's log level");
  std::string level_value;
  level->add_option("level", level_value, "trace, debug, info, warn, error or off")->required();
  auto* reload = app.add_subcommand("reload", "Switch to another model of the server's model_dir");
  std::string reload_name;
  reload->add_option("model", reload_name, "File name in model_dir (see: models)")->required();
  app.add_subcommand("models", "The models reload can switch to");
  app.add_subcommand("shards",
                     "Where the model's layers are computed: this device and its workers, each "
                     "link's state and counters");
  auto* budget = app.add_subcommand(
      "budget", "The memory budget: show it (default), set the operator's, clear it, plan again");
  budget->require_subcommand(0, 1);
  budget->add_subcommand("get", "The budget, its split, pressure and the planner's plan");
  auto* budget_set =
      budget->add_subcommand("set", "The operator's budget for the whole process (e.g. 1.5G)");
  std::string budget_size;
  budget_set
      ->add_option("size", budget_size,
                   "Bytes, or with K/M/G/T (powers of 1024): 800M, 1.5G; under the model's "
                   "floor is refused")
      ->required();
  budget->add_subcommand("clear", "Drop the operator's budget (pressure alone moves it again)");
  budget->add_subcommand("replan", "Plan the current budget again (a new plan version)");
  auto* watch = app.add_subcommand("watch", "Live view of the server (like top)");
  int count = 0;
  watch->add_option("--count", count, "Stop after this many events (0: until Ctrl-C)");
  std::string prompt;
  int max_tokens = 0;
  auto* gen = app.add_subcommand("generate", "Complete a prompt, streaming the text");
  gen->add_option("prompt", prompt, "The prompt")->required();
  gen->add_option("--max-tokens", max_tokens, "Tokens to generate (server default: 128)");
  auto* chat = app.add_subcommand("chat", "One chat turn with the model's template, streamed");
  chat->add_option("message", prompt, "What the user says")->required();
  chat->add_option("--max-tokens", max_tokens, "Tokens to generate (server default: 128)");
  app.add_subcommand("devices", "List the devices of the config file");
  auto* cert = app.add_subcommand(
      "cert", "On the device: make a self-signed certificate and key for sparrowd's TLS");
  std::string cert_dir = ".";
  ctl::CertRequest cert_req;
  cert->add_option("--out", cert_dir, "Directory for sparrow.crt and sparrow.key")
      ->capture_default_str();
  cert->add_option("--name", cert_req.dns_names,
                   "More host names it is reached by (this host's name and addresses are in)");
  cert->add_option("--ip", cert_req.ips, "More addresses it is reached by (a router's NAT, ...)");
  cert->add_option("--days", cert_req.days, "Days it is valid")->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }

  const std::string cmd = app.get_subcommands().front()->get_name();
  // A key file named by the environment counts as given by its flag.
  if (const char* f = std::getenv("SPARROW_ADMIN_KEY_FILE"); f != nullptr && key_file.empty()) {
    key_file = f;
  }
  if (const char* f = std::getenv("SPARROW_API_KEY_FILE"); f != nullptr && api_key_file.empty()) {
    api_key_file = f;
  }
  if (cmd == "cert") return MakeCert(cert_dir, cert_req, json);
  std::string error;
  // The device list: flags, then the environment, then the device's entry, then defaults.
  ctl::CtlConfig config;
  const bool config_given = !config_file.empty();
  if (!config_given) config_file = ctl::DefaultCtlConfigPath();
  if (!ctl::LoadCtlConfig(config_file, config_given, &config, &error)) {
    std::fprintf(stderr, "sparrowctl: %s\n", error.c_str());
    return kExitUsage;
  }
  if (cmd == "devices") return ListDevices(config, config_file, json);
  if (device.empty()) {
    if (const char* d = std::getenv("SPARROW_DEVICE")) device = d;
  }
  // The default device only when no address was given at all.
  if (device.empty() && host_opt->count() == 0 && env_host == nullptr) {
    device = config.default_device;
  }
  if (!device.empty()) {
    const auto it = config.devices.find(device);
    if (it == config.devices.end()) {
      std::fprintf(stderr, "sparrowctl: no device '%s' in %s (sparrowctl devices lists them)\n",
                   device.c_str(), config_file.c_str());
      return kExitUsage;
    }
    const ctl::DeviceEntry& d = it->second;
    if (host_opt->count() == 0 && env_host == nullptr) t.host = d.host;
    if (port_opt->count() == 0 && d.port != 0) t.port = d.port;
    if (timeout_opt->count() == 0 && d.timeout_ms != 0) t.timeout_ms = d.timeout_ms;
    if (t.ca_file.empty() && std::getenv("SPARROW_CA") == nullptr) t.ca_file = d.ca;
    if (key_file.empty() && std::getenv("SPARROW_ADMIN_KEY") == nullptr) key_file = d.key_file;
    if (api_key_file.empty() && std::getenv("SPARROW_API_KEY") == nullptr) {
      api_key_file = d.api_key_file;
    }
  }
  if (t.ca_file.empty()) {
    if (const char* ca = std::getenv("SPARROW_CA")) t.ca_file = ca;
  }
  if (!key_file.empty()) {
    t.admin_key = ctl::ReadKeyFile(key_file, &error);
  } else if (const char* k = std::getenv("SPARROW_ADMIN_KEY")) {
    t.admin_key = k;
  }
  if (error.empty() && !api_key_file.empty()) {
    t.api_key = ctl::ReadKeyFile(api_key_file, &error);
  } else if (const char* k = std::getenv("SPARROW_API_KEY")) {
    t.api_key = k;
  }
  if (!error.empty()) {
    std::fprintf(stderr, "sparrowctl: %s\n", error.c_str());
    return kExitUsage;
  }
  // An admin key also opens the inference API.
  if (t.api_key.empty()) t.api_key = t.admin_key;
  auto client = ctl::CtlClient::Connect(t, &error);
  if (client == nullptr) {
    std::fprintf(stderr, "sparrowctl: %s\n", error.c_str());
    return kExitUsage;
  }
  ctl::CtlClient& c = *client;

  if (cmd == "status") {
    return AdminCall<adminpb::ServerStatus>(
        c, json, [&](auto* ctx, auto* r) { return c.admin().GetStatus(ctx, {}, r); },
        [](const adminpb::ServerStatus& s) { return ctl::RenderStatus(s); });
  }
  if (cmd == "requests") {
    adminpb::ListRequestsRequest req;
    req.set_include_prompt(with_prompt);
    return AdminCall<adminpb::ListRequestsResponse>(
        c, json, [&](auto* ctx, auto* r) { return c.admin().ListRequests(ctx, req, r); },
        [](const adminpb::ListRequestsResponse& r) { return ctl::RenderRequests(r.data()); });
  }
  if (cmd == "cancel") {
    adminpb::CancelRequestRequest req;
    req.set_id(cancel_id);
    return AdminCall<adminpb::CancelRequestResponse>(
        c, json, [&](auto* ctx, auto* r) { return c.admin().CancelRequest(ctx, req, r); },
        [&](const auto&) { return "cancelled " + cancel_id + "\n"; });
  }
  if (cmd == "drain" || cmd == "resume") {
    adminpb::DrainResponse r;
    for (;;) {
      grpc::ClientContext ctx;
      c.Prepare(&ctx, true);
      const grpc::Status st = cmd == "drain" ? c.admin().Drain(&ctx, adminpb::DrainRequest(), &r)
                                             : c.admin().Resume(&ctx, adminpb::ResumeRequest(), &r);
      if (!st.ok()) return Fail(c, st);
      if (cmd != "drain" || !wait || r.drained()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    const std::string human =
        cmd == "resume" ? "serving: admitting requests again\n"
        : r.drained()   ? "drained: nothing running or waiting; new requests get 503\n"
                        : "draining: " + std::to_string(r.running()) + " running and " +
                            std::to_string(r.waiting()) + " waiting finish; new requests get 503\n";
    return Print(r, json, human);
  }
  if (cmd == "log-level") {
    adminpb::SetLogLevelRequest req;
    req.set_level(level_value);
    return AdminCall<adminpb::SetLogLevelResponse>(
        c, json, [&](auto* ctx, auto* r) { return c.admin().SetLogLevel(ctx, req, r); },
        [](const adminpb::SetLogLevelResponse& r) { return "log level " + r.level() + "\n"; });
  }
  if (cmd == "reload") {
    adminpb::ReloadRequest req;
    req.set_model(reload_name);
    return AdminCall<adminpb::ReloadResponse>(
        c, json, [&](auto* ctx, auto* r) { return c.admin().Reload(ctx, req, r); },
        [](const adminpb::ReloadResponse& r) {
          return "now serving " + r.model().id() + " (" + r.model().file() + ", was " +
                 r.previous() + ")\n";
        },
        /*with_deadline=*/false);  // loading a model takes its time
  }
  if (cmd == "models") {
    return AdminCall<adminpb::ListModelsResponse>(
        c, json, [&](auto* ctx, auto* r) { return c.admin().ListModels(ctx, {}, r); },
        [](const adminpb::ListModelsResponse& r) {
          std::string human;
          for (const auto& m : r.data()) {
            char line[512];
            std::snprintf(line, sizeof line, "%s %-40s %10.1f MiB  %s\n", m.serving() ? "*" : " ",
                          m.name().c_str(), static_cast<double>(m.bytes()) / (1 << 20),
                          m.state().c_str());
            human += line;
          }
          return human.empty() ? std::string("model_dir has no .gguf files\n") : human;
        });
  }
  if (cmd == "shards") {
    return AdminCall<adminpb::Shards>(
        c, json, [&](auto* ctx, auto* r) { return c.admin().GetShards(ctx, {}, r); },
        [](const adminpb::Shards& s) { return ctl::RenderShards(s); });
  }
  if (cmd == "budget") {
    const std::string action =
        budget->get_subcommands().empty() ? "get" : budget->get_subcommands().front()->get_name();
    const auto render = [](const adminpb::MemoryBudget& m) { return ctl::RenderMemory(m); };
    if (action == "set") {
      adminpb::SetMemoryBudgetRequest req;
      uint64_t bytes = 0;
      if (!ctl::ParseByteSize(budget_size, &bytes, &error)) {
        std::fprintf(stderr, "sparrowctl: budget set: %s\n", error.c_str());
        return kExitUsage;
      }
      req.set_bytes(bytes);
      return AdminCall<adminpb::MemoryBudget>(
          c, json, [&](auto* ctx, auto* r) { return c.admin().SetMemoryBudget(ctx, req, r); },
          render);
    }
    if (action == "clear") {
      return AdminCall<adminpb::MemoryBudget>(
          c, json, [&](auto* ctx, auto* r) { return c.admin().ClearMemoryBudget(ctx, {}, r); },
          render);
    }
    if (action == "replan") {
      return AdminCall<adminpb::MemoryBudget>(
          c, json, [&](auto* ctx, auto* r) { return c.admin().Replan(ctx, {}, r); }, render);
    }
    return AdminCall<adminpb::MemoryBudget>(
        c, json, [&](auto* ctx, auto* r) { return c.admin().GetMemory(ctx, {}, r); }, render);
  }
  if (cmd == "watch") return Watch(c, json, count);
  if (cmd == "generate" || cmd == "chat") {
    return Generate(c, prompt, max_tokens, cmd == "chat", json);
  }
  return kExitUsage;
}
