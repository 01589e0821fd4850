#pragma once
// The real sparrowd as a child process, for tests that need what only a process has: signals,
// exit codes, file-descriptor limits, the log it writes. Also a raw TCP client that sends bytes
// exactly as given (malformed requests, HTTP/1.0, trickled input) and reads with a deadline.
// Not thread-safe: one object per test thread.
#include <sys/resource.h>
#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sparrow::testing {

class SparrowdProcess {
 public:
  struct Options {
    // After the binary; --port 0 and --grpc-port are up to you. Unless given, --memory-pressure 2
    // (the operator and the host app only) and --hw-profile none are added.
    std::vector<std::string> args;
    rlim_t max_open_files = 0;  // RLIMIT_NOFILE for the child; 0 leaves it alone
    // RLIMIT_AS for the child, so that a build without a memory bound fails its allocations
    // instead of taking the test machine's memory; 0 leaves it alone.
    rlim_t max_address_space = 0;
    // A cgroup's cgroup.procs: the child joins that cgroup before it executes sparrowd.
    std::string cgroup_procs;
  };
  // The sparrowd to test: $SPARROWD_UNDER_TEST when set (to run the tests against another
  // build, such as the one before a fix), else `built`.
  static std::string Binary(const std::string& built);

  // Starts `binary` and waits until it prints where it listens (HTTP, and gRPC unless
  // --grpc-port -1; a --worker only gRPC, with http_port() 0). Null when it does not start within a
  // minute; `*error` says what it printed.
  static std::unique_ptr<SparrowdProcess> Start(const std::string& binary, const Options& options,
                                                std::string* error);
  ~SparrowdProcess();  // SIGKILL if still running

  int http_port() const { return http_port_; }
  int grpc_port() const { return grpc_port_; }  // 0 without gRPC
  pid_t pid() const { return pid_; }
  // Its VmRSS (/proc/PID/status), -1 when gone.
  int64_t ResidentBytes() const;
  // Its VmHWM (/proc/PID/status): the most it was resident at once, -1 when gone.
  int64_t PeakResidentBytes() const;

  // SIGSTOP returns once the whole process has stopped.
  void Signal(int sig);
  // Waits for the child to exit, at most `timeout`; its exit code, or nullopt if it is still
  // running (or was killed by a signal).
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  std::string Stdout() const;  // the log: spdlog writes to stdout
  std::string Stderr() const;

 private:
  SparrowdProcess() = default;
  pid_t pid_ = -1;
  bool exited_ = false;
  int http_port_ = 0, grpc_port_ = 0;
  std::string out_path_, err_path_;
};

// A TCP connection to host:port (IPv4 or IPv6 literal); -1 on failure. Reads time out after
// `read_timeout` so a test never hangs on a server that does not answer.
// receive_buffer_bytes > 0 fixes the socket's receive buffer (SO_RCVBUF, set before connecting,
// so the kernel does not grow it): how much a peer can send that is not read is then bounded.
int ConnectTcp(const std::string& host, int port,
               std::chrono::milliseconds read_timeout = std::chrono::seconds(30),
               int receive_buffer_bytes = 0);
bool SendAll(int fd, const std::string& bytes);
// Reads until the peer closes, an error, the read timeout, or `max_bytes`.
std::string ReadUntilClose(int fd, size_t max_bytes = size_t{64} << 20);
// The status code of a raw HTTP response ("HTTP/1.1 431 ..."), 0 if there is none.
int StatusOf(const std::string& raw_response);
// Sends `request` on a fresh connection and returns everything read until the server closes.
std::string RawExchange(const std::string& host, int port, const std::string& request);
// POSTs `json_body` to 127.0.0.1:`port` `path` over HTTP/1.0: the status (0 without a response)
// and the body.
std::pair<int, std::string> PostJsonHttp10(int port, const std::string& path,
                                           const std::string& json_body);

// A command run to its end (a client binary such as sparrowctl): exit code (-1 when it did not
// exit normally) and its stdout and stderr together.
struct CommandResult {
  int exit_code = -1;
  std::string out;
};
CommandResult RunCommand(const std::string& shell_command);

}  // namespace sparrow::testing
