//===- Status.h - Errors of the FA runtime ----------------------*- C++ -*-===//
//
// The FA runtime builds with -fno-exceptions and reports every failure as a
// value: `Status` (success, or an error with a message) and `Expected<T>` (a
// T, or an error with a message). Messages stand on their own: they name what
// failed (for CUDA, the driver call with the driver's error name and string),
// so a caller can print them as they are.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_STATUS_H
#define FA_RUNTIME_STATUS_H

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace fa::runtime {

/// Success, or an error with a message.
class [[nodiscard]] Status {
public:
  /// Success.
  Status() = default;
  static Status success() { return Status(); }
  /// An error; `message` should not be empty.
  static Status error(std::string message) {
    Status status;
    status.isError = true;
    status.msg = std::move(message);
    return status;
  }

  bool ok() const { return !isError; }
  bool failed() const { return isError; }
  /// The error message ("" on success).
  const std::string &getMessage() const { return msg; }

  /// Prefixes the message of an error with `context` ("context: message").
  Status &withContext(const std::string &context) {
    if (isError)
      msg = context + ": " + msg;
    return *this;
  }

  /// Aborts the process, printing the message, when this is an error. For
  /// tools and tests where an error cannot be handled.
  void check() const {
    if (isError) {
      std::fprintf(stderr, "fa runtime: %s\n", msg.c_str());
      std::abort();
    }
  }

private:
  bool isError = false;
  std::string msg;
};

/// A T, or an error with a message. Constructible from a T (success) or from a
/// failed Status (error).
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : storage(std::move(value)) {}
  template <typename U, typename = std::enable_if_t<
                            std::is_convertible_v<U &&, T> &&
                            !std::is_same_v<std::decay_t<U>, T> &&
                            !std::is_same_v<std::decay_t<U>, Status>>>
  Expected(U &&value) : storage(T(std::forward<U>(value))) {}
  Expected(Status status) : err(std::move(status)) {
    if (err.ok())
      err = Status::error("internal error: Expected built from success");
  }

  bool ok() const { return storage.has_value(); }
  bool failed() const { return !storage.has_value(); }
  /// The error ("" message on success).
  const Status &getStatus() const { return err; }
  const std::string &getMessage() const { return err.getMessage(); }

  /// The value; aborts with the message when this holds an error.
  T &value() & {
    assertOk();
    return *storage;
  }
  const T &value() const & {
    assertOk();
    return *storage;
  }
  T &&value() && {
    assertOk();
    return std::move(*storage);
  }
  /// Moves the value out (aborts on error).
  T take() {
    assertOk();
    return std::move(*storage);
  }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }

private:
  void assertOk() const {
    if (!storage) {
      std::fprintf(stderr, "fa runtime: %s\n", err.getMessage().c_str());
      std::abort();
    }
  }

  std::optional<T> storage;
  Status err;
};

} // namespace fa::runtime

#endif // FA_RUNTIME_STATUS_H
