#include "server/admin/admin_controller.h"

#include <spdlog/spdlog.h>

namespace sparrow::server {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
constexpr size_t kMaxSamples = 61;  // one a second: a minute and the sample before it

std::string ResultName(const Status& s) {
  if (s.ok()) return "ok";
  switch (s.code()) {
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    default:
      return "error";
  }
}

}  // namespace

Result<std::shared_ptr<AdminController>> AdminController::Start(ServerContext& ctx) {
  std::shared_ptr<AdminController> a(new AdminController(ctx));
  a->model_ = DescribeModel(ctx);
  SPARROW_ASSIGN_OR_RETURN(a->audit_, AuditLog::Open(ctx.config.audit_log, &ctx.metrics));
  a->thread_ = std::thread([p = a.get()] { p->Run(); });
  return a;
}

AdminController::~AdminController() {
  Stop();
}

void AdminController::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void AdminController::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  auto next = Clock::now();
  while (!stop_) {
    lock.unlock();
    const int64_t generated = ctx_.scheduler->Stats().generated_tokens;
    lock.lock();
    samples_.emplace_back(Clock::now(), generated);
    while (samples_.size() > kMaxSamples) samples_.pop_front();
    if (hub_.subscribers() > 0) {
      lock.unlock();
      hub_.Publish("status",
                   StatusJson(Snapshot()).dump(-1, ' ', false, json::error_handler_t::replace));
      lock.lock();
    }
    next += std::chrono::seconds(1);
    cv_.wait_until(lock, next, [&] { return stop_; });
  }
}

ServerStatus AdminController::Snapshot() const {
  ServerStatus s = CollectStatus(ctx_, model_);
  s.event_subscribers = static_cast<int64_t>(hub_.subscribers());
  std::lock_guard<std::mutex> lock(mu_);
  if (!samples_.empty()) {
    // Against the sample closest to 10 s (60 s) ago; since start when younger than that.
    const auto now = Clock::now();
    const int64_t current = s.generated_tokens;
    auto rate = [&](std::chrono::seconds span) {
      const auto* base = &samples_.front();
      for (const auto& smp : samples_) {
        if (now - smp.first <= span) break;
        base = &smp;
      }
      const double dt = std::chrono::duration<double>(now - base->first).count();
      return dt > 0.5 ? static_cast<double>(current - base->second) / dt : 0.0;
    };
    s.tokens_per_s_10s = rate(std::chrono::seconds(10));
    s.tokens_per_s_60s = rate(std::chrono::seconds(60));
  }
  return s;
}

std::vector<RequestSnapshot> AdminController::Requests() const {
  return ctx_.requests.List(false);
}

std::vector<RequestSnapshot> AdminController::RequestsWithPrompts(const AdminCaller& who) {
  auto list = ctx_.requests.List(true);
  Done(who, "list_prompts", json{{"requests", list.size()}}, Status::Ok());
  return list;
}

void AdminController::Done(const AdminCaller& who, const std::string& action, const json& args,
                           const Status& result) {
  const std::string name = ResultName(result);
  audit_->Record(who, action, args, name, result.ok() ? "" : result.message());
  const json event = {{"action", action},     {"args", args},
                      {"result", name},       {"detail", result.ok() ? "" : result.message()},
                      {"remote", who.remote}, {"key_id", who.key_id}};
  hub_.Publish("action", event.dump(-1, ' ', false, json::error_handler_t::replace));
}

Status AdminController::Cancel(const AdminCaller& who, const std::string& id) {
  Status s = ctx_.requests.Cancel(id) ? Status::Ok()
                                      : NotFound("no request '" + id +
                                                 "' is being served (GET "
                                                 "/admin/v1/requests lists them)");
  Done(who, "cancel", json{{"id", id}}, s);
  return s;
}

Status AdminController::Drain(const AdminCaller& who) {
  const bool was = ctx_.draining.exchange(true);
  if (!was) spdlog::warn("admin: draining: new generations are refused until resume");
  Done(who, "drain", json::object(), Status::Ok());
  return Status::Ok();
}

Status AdminController::Resume(const AdminCaller& who) {
  const bool was = ctx_.draining.exchange(false);
  if (was) spdlog::warn("admin: resumed: admitting generations again");
  Done(who, "resume", json::object(), Status::Ok());
  return Status::Ok();
}

Status AdminController::SetLogLevel(const AdminCaller& who, const std::string& level) {
  static const char* kLevels[] = {"trace", "debug", "info", "warn", "error", "off"};
  Status s;
  if (std::find(std::begin(kLevels), std::end(kLevels), level) == std::end(kLevels)) {
    s = InvalidArgument("'level' must be trace, debug, info, warn, error or off, got '" + level +
                        "'");
  } else {
    spdlog::set_level(spdlog::level::from_str(level));
  }
  Done(who, "log_level", json{{"level", level}}, s);
  return s;
}

void AdminController::RecordRefused(const AdminCaller& who, const std::string& action,
                                    const std::string& why) {
  Done(who, action, json::object(), InvalidArgument(why));
}

std::shared_ptr<EventSubscription> AdminController::Subscribe(std::function<void()> on_ready) {
  auto sub = hub_.Subscribe(std::move(on_ready));
  // A first snapshot at once, so a new watcher does not wait a second for anything.
  hub_.SendTo(*sub, "status",
              StatusJson(Snapshot()).dump(-1, ' ', false, json::error_handler_t::replace));
  return sub;
}

}  // namespace sparrow::server
