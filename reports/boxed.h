// An optional value kept on the heap, used as std::optional is. A report::Finding carries the
// details of several finding kinds (out of memory, fragmentation, a launch parameter, growth) and
// uses at most one of them: held inline they made every finding 1,056 bytes, most of a million-site
// leak report's memory (issue 51); boxed, a finding without them is about 400.
#pragma once

#include <memory>
#include <optional>
#include <utility>

namespace cuaudit::report {

template <typename T>
class Boxed {
 public:
  Boxed() = default;
  Boxed(std::nullopt_t) {}  // NOLINT: as std::optional converts
  Boxed(const T& value) : value_(std::make_unique<T>(value)) {}
  Boxed(T&& value) : value_(std::make_unique<T>(std::move(value))) {}
  Boxed(const std::optional<T>& value) : value_(value ? std::make_unique<T>(*value) : nullptr) {}
  Boxed(std::optional<T>&& value) : value_(value ? std::make_unique<T>(std::move(*value)) : nullptr) {}
  Boxed(const Boxed& other) : value_(other.value_ ? std::make_unique<T>(*other.value_) : nullptr) {}
  Boxed(Boxed&&) noexcept = default;
  Boxed& operator=(const Boxed& other) {
    if (this != &other) value_ = other.value_ ? std::make_unique<T>(*other.value_) : nullptr;
    return *this;
  }
  Boxed& operator=(Boxed&&) noexcept = default;
  ~Boxed() = default;

  template <typename... Args>
  T& emplace(Args&&... args) {
    value_ = std::make_unique<T>(std::forward<Args>(args)...);
    return *value_;
  }
  void reset() noexcept { value_.reset(); }
  bool has_value() const noexcept { return value_ != nullptr; }
  explicit operator bool() const noexcept { return has_value(); }
  T& operator*() noexcept { return *value_; }
  const T& operator*() const noexcept { return *value_; }
  T* operator->() noexcept { return value_.get(); }
  const T* operator->() const noexcept { return value_.get(); }

 private:
  std::unique_ptr<T> value_;
};

}  // namespace cuaudit::report
