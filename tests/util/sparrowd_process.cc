#include "tests/util/sparrowd_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/util/test_paths.h"

namespace sparrow::testing {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::string SparrowdProcess::Binary(const std::string& built) {
  const char* env = std::getenv("SPARROWD_UNDER_TEST");
  return env != nullptr && *env != '\0' ? std::string(env) : built;
}

std::unique_ptr<SparrowdProcess> SparrowdProcess::Start(const std::string& binary,
                                                        const Options& options,
                                                        std::string* error) {
  std::unique_ptr<SparrowdProcess> p(new SparrowdProcess());
  p->out_path_ = TempPath("sparrowd.out");
  p->err_path_ = TempPath("sparrowd.err");
  std::vector<std::string> args = {binary};
  args.insert(args.end(), options.args.begin(), options.args.end());
  // The machine's memory pressure and a developer's hardware profile must not decide a test's
  // outcome (a busy machine's PSI turns critical and sparrowd refuses new requests, as it
  // should): tests that want them say so.
  auto given = [&](const std::string& flag) {
    return std::find(options.args.begin(), options.args.end(), flag) != options.args.end();
  };
  if (!given("--memory-pressure")) args.insert(args.end(), {"--memory-pressure", "2"});
  if (!given("--hw-profile")) args.insert(args.end(), {"--hw-profile", "none"});
  p->pid_ = ::fork();
  if (p->pid_ == 0) {
    if (std::freopen(p->out_path_.c_str(), "w", stdout) == nullptr ||
        std::freopen(p->err_path_.c_str(), "w", stderr) == nullptr) {
      std::_Exit(126);
    }
    if (options.max_address_space > 0) {
      rlimit lim{options.max_address_space, options.max_address_space};
      ::setrlimit(RLIMIT_AS, &lim);
    }
    if (options.max_open_files > 0) {
      rlimit lim{options.max_open_files, options.max_open_files};
      ::setrlimit(RLIMIT_NOFILE, &lim);
    }
    if (!options.cgroup_procs.empty()) {
      // Only async-signal-safe calls between fork and exec: the pid by hand.
      char digits[24];
      int n = 0;
      for (pid_t v = ::getpid(); v > 0; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
      char text[24];
      for (int i = 0; i < n; ++i) text[i] = digits[n - 1 - i];
      const int fd = ::open(options.cgroup_procs.c_str(), O_WRONLY);
      if (fd < 0 || ::write(fd, text, static_cast<size_t>(n)) != n) std::_Exit(125);
      ::close(fd);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(binary.c_str(), argv.data());
    std::_Exit(127);
  }
  bool want_grpc = true;
  for (size_t i = 0; i + 1 < options.args.size(); ++i) {
    if (options.args[i] == "--grpc-port" && options.args[i + 1] == "-1") want_grpc = false;
  }
  const std::regex http_re("HTTP listening on https?://(\\[[^\\]]+\\]|[^:]+):([0-9]+)");
  const std::regex grpc_re("gRPC listening on (\\[[^\\]]+\\]|[^:]+):([0-9]+)");
  // A worker (--worker) serves gRPC only.
  const std::regex worker_re("worker listening on (\\[[^\\]]+\\]|[^:]+):([0-9]+)");
  for (int i = 0; i < 1200; ++i) {
    const std::string out = Slurp(p->out_path_);
    std::smatch m;
    if (std::regex_search(out, m, worker_re)) {
      p->grpc_port_ = std::stoi(m[2]);
      return p;
    }
    if (p->http_port_ == 0 && std::regex_search(out, m, http_re)) p->http_port_ = std::stoi(m[2]);
    if (p->grpc_port_ == 0 && std::regex_search(out, m, grpc_re)) p->grpc_port_ = std::stoi(m[2]);
    if (p->http_port_ != 0 && (!want_grpc || p->grpc_port_ != 0)) return p;
    int status = 0;
    if (::waitpid(p->pid_, &status, WNOHANG) == p->pid_) {
      p->exited_ = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (error) *error = "sparrowd did not start: " + Slurp(p->out_path_) + Slurp(p->err_path_);
  return nullptr;
}

SparrowdProcess::~SparrowdProcess() {
  if (pid_ > 0 && !exited_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

namespace {

// A "Name:   N kB" line of /proc/PID/status, in bytes; -1 when the process or line is gone.
int64_t StatusBytes(pid_t pid, const std::string& name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name, 0) == 0) return std::stoll(line.substr(name.size())) * 1024;
  }
  return -1;
}

}  // namespace

int64_t SparrowdProcess::ResidentBytes() const {
  return StatusBytes(pid_, "VmRSS:");
}

int64_t SparrowdProcess::PeakResidentBytes() const {
  return StatusBytes(pid_, "VmHWM:");
}

void SparrowdProcess::Signal(int sig) {
  if (pid_ <= 0 || exited_) return;
  ::kill(pid_, sig);
  if (sig != SIGSTOP) return;
  // kill() returns before the group stop ends: the thread picked for the signal must first be
  // scheduled, and the other threads go on serving meanwhile (on a loaded machine, a whole short
  // request). The parent hears of the stop only once every thread has stopped.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG | WUNTRACED);
    if (r == pid_ && WIFSTOPPED(status)) return;
    if (r == pid_) {
      exited_ = true;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::optional<int> SparrowdProcess::Wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!exited_) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      return std::nullopt;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return std::nullopt;
}

std::string SparrowdProcess::Stdout() const {
  return Slurp(out_path_);
}
std::string SparrowdProcess::Stderr() const {
  return Slurp(err_path_);
}

int ConnectTcp(const std::string& host, int port, std::chrono::milliseconds read_timeout,
               int receive_buffer_bytes) {
  sockaddr_storage addr{};
  socklen_t len = 0;
  const std::string bare =
      host.size() > 2 && host.front() == '[' ? host.substr(1, host.size() - 2) : host;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (::inet_pton(AF_INET, bare.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof(sockaddr_in);
  } else if (::inet_pton(AF_INET6, bare.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof(sockaddr_in6);
  } else {
    return -1;
  }
  const int fd = ::socket(addr.ss_family, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(read_timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>(read_timeout.count() % 1000 * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (receive_buffer_bytes > 0) {
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer_bytes, sizeof receive_buffer_bytes);
  }
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

std::string ReadUntilClose(int fd, size_t max_bytes) {
  std::string out;
  char buf[16384];
  while (out.size() < max_bytes) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

int StatusOf(const std::string& raw) {
  if (raw.size() < 12 || raw.compare(0, 5, "HTTP/") != 0) return 0;
  return std::atoi(raw.c_str() + 9);
}

std::string RawExchange(const std::string& host, int port, const std::string& request) {
  const int fd = ConnectTcp(host, port);
  if (fd < 0) return "";
  SendAll(fd, request);
  std::string out = ReadUntilClose(fd);
  ::close(fd);
  return out;
}

std::pair<int, std::string> PostJsonHttp10(int port, const std::string& path,
                                           const std::string& json_body) {
  const std::string raw = RawExchange(
      "127.0.0.1", port,
      "POST " + path + " HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: " +
          std::to_string(json_body.size()) + "\r\n\r\n" + json_body);
  const size_t head = raw.find("\r\n\r\n");
  return {StatusOf(raw), head == std::string::npos ? "" : raw.substr(head + 4)};
}

CommandResult RunCommand(const std::string& shell_command) {
  CommandResult r;
  FILE* p = ::popen((shell_command + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int st = ::pclose(p);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

}  // namespace sparrow::testing
