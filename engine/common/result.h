#pragma once
// Result<T>: a value or the Status saying why there is none (C++20 has no std::expected).
#include <cassert>
#include <optional>
#include <utility>

#include "engine/common/status.h"

namespace sparrow {

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    assert(!status_.ok() && "Result built from an OK status carries no value");
    if (status_.ok()) status_ = Internal("Result constructed from OK status without a value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace sparrow

#define SPARROW_CONCAT_INNER_(a, b) a##b
#define SPARROW_CONCAT_(a, b) SPARROW_CONCAT_INNER_(a, b)
// SPARROW_ASSIGN_OR_RETURN(auto x, MakeX()); returns the Status from the enclosing function on
// error.
#define SPARROW_ASSIGN_OR_RETURN(lhs, expr) \
  SPARROW_ASSIGN_OR_RETURN_IMPL_(SPARROW_CONCAT_(sparrow_result_, __LINE__), lhs, expr)
#define SPARROW_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = std::move(tmp).value()
