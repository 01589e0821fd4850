#pragma once
// AuditLog: one record per admin action (time, client address, key id, action, arguments,
// result), as a JSON line appended to its own file, or to the main log when no file is set.
// Each record also counts in sparrow_admin_actions_total. Thread-safe.
#include <cstdio>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/common/result.h"
#include "server/core/metrics.h"

namespace sparrow::server {

// Who asked for an admin action.
struct AdminCaller {
  std::string frontend;  // "http" or "grpc"
  std::string remote;    // address (and port) of the client
  std::string key_id;    // the admin key's id ("loopback" when admin_loopback_open let it in)
};

class AuditLog {
 public:
  // `path` "" writes to the main log. IoError naming the file when it cannot be opened.
  static Result<std::unique_ptr<AuditLog>> Open(const std::string& path, Metrics* metrics);
  ~AuditLog();

  // `result` is "ok" or a short reason ("not_found", "invalid_argument", ...); `detail` a
  // message for people (may be "").
  void Record(const AdminCaller& who, const std::string& action, const nlohmann::json& args,
              const std::string& result, const std::string& detail);

 private:
  AuditLog() = default;
  std::mutex mu_;
  std::FILE* file_ = nullptr;  // null: the main log
  Metrics* metrics_ = nullptr;
};

}  // namespace sparrow::server
