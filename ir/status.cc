#include "ir/status.h"

namespace amptrain {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kUnimplemented: return "unimplemented";
    case StatusCode::kOutOfRange: return "out of range";
    case StatusCode::kFailedPrecondition: return "failed precondition";
    case StatusCode::kIoError: return "i/o error";
    case StatusCode::kInternal: return "internal error";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return StrCat(StatusCodeName(code_), ": ", message_);
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, StrCat(context, ": ", message_));
}

}  // namespace amptrain
