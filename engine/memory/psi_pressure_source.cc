// PSI triggers (Documentation/accounting/psi.rst): writing "<some|full> <stall us> <window us>"
// to /proc/pressure/memory arms a trigger on that descriptor, which then polls POLLPRI each
// window the stall passes the threshold.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "engine/memory/pressure_source.h"

namespace sparrow {
namespace {

// lmkd's thresholds: a "some" stall of 70 ms per second is medium, a "full" stall of 700 ms per
// second critical. Without CAP_SYS_RESOURCE the kernel takes only windows that are multiples of
// 2 s (EINVAL otherwise): the same shares over 2 s.
struct Trigger {
  const char* kind;
  uint64_t stall_us;
};
constexpr Trigger kSome{"some", 70000};
constexpr Trigger kFull{"full", 700000};

std::string TriggerText(const Trigger& t, uint64_t window_us) {
  return std::string(t.kind) + " " + std::to_string(t.stall_us * window_us / 1000000) + " " +
         std::to_string(window_us);
}

class PsiPressureSource : public PressureSource {
 public:
  PsiPressureSource(int some, int full, std::string some_text, std::string full_text)
      : some_(some),
        full_(full),
        some_text_(std::move(some_text)),
        full_text_(std::move(full_text)) {}
  ~PsiPressureSource() override {
    close(some_);
    close(full_);
  }
  std::string_view name() const override { return "psi"; }
  std::vector<pollfd> fds() const override { return {{some_, POLLPRI, 0}, {full_, POLLPRI, 0}}; }
  PressureReading Read(int fired) override {
    if (fired == full_)
      return {PressureLevel::kCritical, "memory stall past \"" + full_text_ + "\""};
    if (fired == some_) return {PressureLevel::kMedium, "memory stall past \"" + some_text_ + "\""};
    return {};
  }

 private:
  int some_, full_;
  std::string some_text_, full_text_;
};

// A descriptor with `t` armed (1 s window, else 2 s), and the trigger's text.
Result<std::pair<int, std::string>> Arm(const std::string& path, const Trigger& t) {
  Status last = Status::Ok();
  for (uint64_t window_us : {1000000, 2000000}) {
    const int fd = open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return Unsupported(path + ": cannot open: " + std::strerror(errno));
    const std::string text = TriggerText(t, window_us);
    // The kernel wants the terminating NUL.
    if (write(fd, text.c_str(), text.size() + 1) >= 0) return std::make_pair(fd, text);
    last = Unsupported(path + ": trigger \"" + text + "\" refused: " + std::strerror(errno));
    close(fd);
  }
  return last;
}

}  // namespace

Result<std::unique_ptr<PressureSource>> OpenPsiPressureSource(const std::string& path) {
  SPARROW_ASSIGN_OR_RETURN(auto some, Arm(path, kSome));
  auto full = Arm(path, kFull);
  if (!full.ok()) {
    close(some.first);
    return full.status();
  }
  return std::unique_ptr<PressureSource>(std::make_unique<PsiPressureSource>(
      some.first, full->first, std::move(some.second), std::move(full->second)));
}

}  // namespace sparrow
