#include "server/admin/audit_log.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

namespace sparrow::server {
namespace {

std::string UtcNow() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

}  // namespace

Result<std::unique_ptr<AuditLog>> AuditLog::Open(const std::string& path, Metrics* metrics) {
  std::unique_ptr<AuditLog> log(new AuditLog());
  log->metrics_ = metrics;
  if (!path.empty()) {
    log->file_ = std::fopen(path.c_str(), "a");
    if (log->file_ == nullptr) {
      return IoError("config: cannot open 'audit_log' '" + path +
                     "' for appending: " + std::strerror(errno));
    }
  }
  return log;
}

AuditLog::~AuditLog() {
  if (file_) std::fclose(file_);
}

void AuditLog::Record(const AdminCaller& who, const std::string& action, const nlohmann::json& args,
                      const std::string& result, const std::string& detail) {
  const nlohmann::json line = {{"time", UtcNow()},     {"frontend", who.frontend},
                               {"remote", who.remote}, {"key_id", who.key_id},
                               {"action", action},     {"args", args},
                               {"result", result},     {"detail", detail}};
  const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (metrics_) metrics_->CountAdminAction(action, result);
  std::lock_guard<std::mutex> lock(mu_);
  if (file_) {
    std::fputs(text.c_str(), file_);
    std::fputc('\n', file_);
    std::fflush(file_);
  } else {
    spdlog::info("audit: {}", text);
  }
}

}  // namespace sparrow::server
