// Expected<T>: a T or the Status that explains why there is none (absl's
// StatusOr, C++23's std::expected). Constructed from a T (success) or from a
// non-OK Status (failure); constructing one from an OK Status is a bug and
// turns into an Internal error.
#pragma once

#include <cassert>
#include <optional>
#include <utility>

#include "status/status.h"

namespace ortgpu {

template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Expected(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = Internal("Expected built from an OK status without a value");
  }

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }

  // REQUIRES: ok().
  T& value() & { assert(ok()); return *value_; }
  const T& value() const& { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // OK when a value is held.
  const Status& status() const { return status_; }

  T value_or(T fallback) const& { return ok() ? *value_ : std::move(fallback); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace ortgpu

#define ORTGPU_CONCAT_INNER(a, b) a##b
#define ORTGPU_CONCAT(a, b) ORTGPU_CONCAT_INNER(a, b)
// ORTGPU_ASSIGN_OR_RETURN(auto x, Compute()); returns the Status on failure.
#define ORTGPU_ASSIGN_OR_RETURN(lhs, expr) \
  ORTGPU_ASSIGN_OR_RETURN_IMPL(ORTGPU_CONCAT(_exp_, __LINE__), lhs, expr)
#define ORTGPU_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
