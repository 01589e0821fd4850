#pragma once
// Status: the one error type for recoverable failures (bad files, bad requests, I/O errors,
// no memory). Either OK, or a code plus a message a user can act on. Thread-compatible.
#include <string>
#include <string_view>
#include <utility>

namespace sparrow {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // the caller's input is wrong (request, flag, config value)
  kNotFound,           // a file, key, tensor or model that was named does not exist
  kCorrupt,            // a file is malformed, truncated or inconsistent
  kUnsupported,        // well-formed, but a feature (architecture, tensor type) we do not handle
  kIoError,            // the operating system refused a read, write or map
  kResourceExhausted,  // out of memory, KV blocks or queue slots
  kOutOfRange,         // a value outside what a context, vocabulary or table allows
  kCancelled,
  kUnavailable,  // not taking this now (draining, shutting down, reloading): retry later
  kInternal,     // a broken invariant that was still caught
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "Corrupt: model.gguf: tensor 'x' ends past the end of the file".
  std::string ToString() const;

  // Prefixes context, e.g. the file name, keeping the code.
  Status WithContext(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFound(std::string m) {
  return {StatusCode::kNotFound, std::move(m)};
}
inline Status Corrupt(std::string m) {
  return {StatusCode::kCorrupt, std::move(m)};
}
inline Status Unsupported(std::string m) {
  return {StatusCode::kUnsupported, std::move(m)};
}
inline Status IoError(std::string m) {
  return {StatusCode::kIoError, std::move(m)};
}
inline Status ResourceExhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status OutOfRange(std::string m) {
  return {StatusCode::kOutOfRange, std::move(m)};
}
inline Status Unavailable(std::string m) {
  return {StatusCode::kUnavailable, std::move(m)};
}
inline Status Internal(std::string m) {
  return {StatusCode::kInternal, std::move(m)};
}

}  // namespace sparrow

// Returns early from the enclosing function when `expr` yields a non-OK Status.
#define SPARROW_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::sparrow::Status sparrow_status_ = (expr);        \
    if (!sparrow_status_.ok()) return sparrow_status_; \
  } while (0)
