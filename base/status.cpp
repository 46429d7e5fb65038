#include "base/status.hpp"

#include <cstring>

namespace clairfs {

Status Status::FromErrno(int err, const std::string& context) {
  std::string msg = context + ": " + std::strerror(err);
  switch (err) {
    case ENOENT:
      return Status(Code::kNotFound, err, std::move(msg));
    case ENOSPC:
    case EDQUOT:
      return Status(Code::kNoSpace, err, std::move(msg));
    case EEXIST:
      return Status(Code::kAlreadyExists, err, std::move(msg));
    case EINVAL:
      return Status(Code::kInvalidArgument, err, std::move(msg));
    default:
      return Status(Code::kIOError, err, std::move(msg));
  }
}

std::string Status::ToString() const {
  const char* name = "OK";
  switch (code_) {
    case Code::kOk:
      return "OK";
    case Code::kNotFound:
      name = "NotFound";
      break;
    case Code::kCorruption:
      name = "Corruption";
      break;
    case Code::kIOError:
      name = "IOError";
      break;
    case Code::kInvalidArgument:
      name = "InvalidArgument";
      break;
    case Code::kAlreadyExists:
      name = "AlreadyExists";
      break;
    case Code::kNoSpace:
      name = "NoSpace";
      break;
    case Code::kUnsupported:
      name = "Unsupported";
      break;
    case Code::kUnavailable:
      name = "Unavailable";
      break;
  }
  return std::string(name) + ": " + message_;
}

}  // namespace clairfs
