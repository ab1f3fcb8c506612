// Status and StatusOr<T>: the one error model of amptrain.
//
// Library code never exits or aborts on bad input: it returns a Status whose
// message names the problem (node, op, opset, file). The CLI turns a non-OK
// Status into one line on stderr and a non-zero exit code.
#pragma once

#include <optional>
#include <sstream>
#include <string>
#include <utility>

namespace amptrain {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // malformed input: model, flag, data file
  kNotFound,          // missing file, name or kernel
  kUnimplemented,     // valid input we do not support (op, dtype, attribute)
  kOutOfRange,        // index or value outside its bounds
  kFailedPrecondition,
  kIoError,
  kInternal,          // a bug in amptrain
};

const char* StatusCodeName(StatusCode code);

// Concatenates anything streamable; keeps ir/ free of formatting libraries.
template <class... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid argument: <message>"
  std::string ToString() const;
  // Prepends context: "while importing node 'conv1': <message>".
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <class... A> Status InvalidArgument(const A&... a) { return Status(StatusCode::kInvalidArgument, StrCat(a...)); }
template <class... A> Status NotFound(const A&... a) { return Status(StatusCode::kNotFound, StrCat(a...)); }
template <class... A> Status Unimplemented(const A&... a) { return Status(StatusCode::kUnimplemented, StrCat(a...)); }
template <class... A> Status OutOfRange(const A&... a) { return Status(StatusCode::kOutOfRange, StrCat(a...)); }
template <class... A> Status FailedPrecondition(const A&... a) { return Status(StatusCode::kFailedPrecondition, StrCat(a...)); }
template <class... A> Status IoError(const A&... a) { return Status(StatusCode::kIoError, StrCat(a...)); }
template <class... A> Status Internal(const A&... a) { return Status(StatusCode::kInternal, StrCat(a...)); }

template <class T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Internal("StatusOr constructed from an OK status without a value");
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace amptrain

#define AMP_CONCAT_INNER_(a, b) a##b
#define AMP_CONCAT_(a, b) AMP_CONCAT_INNER_(a, b)

#define AMP_RETURN_IF_ERROR(expr)                  \
  do {                                             \
    ::amptrain::Status amp_status_ = (expr);       \
    if (!amp_status_.ok()) return amp_status_;     \
  } while (0)

#define AMP_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()

// AMP_ASSIGN_OR_RETURN(auto x, MakeX()); returns the Status on error.
#define AMP_ASSIGN_OR_RETURN(lhs, expr) \
  AMP_ASSIGN_OR_RETURN_IMPL_(AMP_CONCAT_(amp_statusor_, __LINE__), lhs, expr)
