// Status and Result<T>: the one error type of clairfs.
//
// A Status is OK or carries a code, an errno value that the FUSE layer can hand
// to the kernel unchanged, and a message that names the file, partition or peer.
// errno becomes a Status in exactly one place: Status::FromErrno at the syscall.
// Value types; thread-compatible.
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>

namespace clairfs {

enum class Code {
  kOk = 0,
  kNotFound,         // a path or entry does not exist
  kCorruption,       // stored bytes do not match their checksum or do not parse
  kIOError,          // the operating system refused a read or write
  kInvalidArgument,  // the caller asked for something malformed
  kAlreadyExists,    // the target exists and overwriting was not asked for
  kNoSpace,          // the disk filled up
  kUnsupported,      // a feature, file type or version this build cannot handle
  kUnavailable,      // not there yet: asking again later may succeed
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK

  static Status Ok() { return Status(); }
  static Status NotFound(std::string msg) {
    return Status(Code::kNotFound, ENOENT, std::move(msg));
  }
  static Status Corruption(std::string msg) {
    return Status(Code::kCorruption, EIO, std::move(msg));
  }
  static Status IOError(std::string msg, int err = EIO) {
    return Status(Code::kIOError, err, std::move(msg));
  }
  static Status InvalidArgument(std::string msg) {
    return Status(Code::kInvalidArgument, EINVAL, std::move(msg));
  }
  static Status AlreadyExists(std::string msg) {
    return Status(Code::kAlreadyExists, EEXIST, std::move(msg));
  }
  static Status Unsupported(std::string msg) {
    return Status(Code::kUnsupported, ENOTSUP, std::move(msg));
  }
  static Status NoSpace(std::string msg) { return Status(Code::kNoSpace, ENOSPC, std::move(msg)); }
  static Status Unavailable(std::string msg) {
    return Status(Code::kUnavailable, EAGAIN, std::move(msg));
  }
  // Turns an errno value into a Status whose message is "<context>: <strerror>".
  static Status FromErrno(int err, const std::string& context);

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  int err() const { return err_; }  // errno-compatible; 0 when ok
  const std::string& message() const { return message_; }
  bool IsCorruption() const { return code_ == Code::kCorruption; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsUnavailable() const { return code_ == Code::kUnavailable; }
  // The same code and errno, the message preceded by `prefix` (context such
  // as "frame 3: "); OK stays OK.
  Status WithPrefix(const std::string& prefix) const {
    return ok() ? Status() : Status(code_, err_, prefix + message_);
  }
  // "Corruption: <message>" and the like; "OK" when ok.
  std::string ToString() const;

 private:
  Status(Code code, int err, std::string msg) : code_(code), err_(err), message_(std::move(msg)) {}

  Code code_ = Code::kOk;
  int err_ = 0;
  std::string message_;
};

// Either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  // An OK status carries no value: it becomes an error here rather than a
  // Result whose ok() and status().ok() disagree.
  Result(Status status)
      : v_(status.ok() ? Status::InvalidArgument("internal: Result built from an OK status")
                       : std::move(status)) {}

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace clairfs

// Returns early from the enclosing function when `expr` yields a non-OK Status.
#define CLAIRFS_RETURN_IF_ERROR(expr) \
  do {                                \
    ::clairfs::Status _st = (expr);   \
    if (!_st.ok()) return _st;        \
  } while (0)
