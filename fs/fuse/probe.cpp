#include "fs/fuse/probe.hpp"

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 314
#endif
#include <fuse_lowlevel.h>
#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace clairfs::fs {
namespace {

struct ProbeState {
  FuseProbe probe;
  bool initialized = false;
};

void ProbeInit(void* userdata, fuse_conn_info* conn) {
  auto* state = static_cast<ProbeState*>(userdata);
  state->probe.proto_major = conn->proto_major;
  state->probe.proto_minor = conn->proto_minor;
  state->initialized = true;
}

// fusermount3 (a child) and libfuse report why a mount failed on stderr only:
// while it lives, fd 2 goes to a temporary file, whose text the caller gets.
class StderrCapture {
 public:
  StderrCapture() : file_(std::tmpfile()), saved_(::dup(2)) {
    std::fflush(stderr);
    if (file_ && saved_ >= 0) ::dup2(::fileno(file_), 2);
  }
  ~StderrCapture() {
    Restore();
    if (file_) std::fclose(file_);
  }
  std::string Text() {
    Restore();
    std::string text;
    if (!file_) return text;
    std::rewind(file_);
    char buf[512];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, file_)) > 0;) text.append(buf, n);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    for (char& c : text) {
      if (c == '\n') c = ';';
    }
    return text;
  }

 private:
  void Restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }
  FILE* file_;
  int saved_;
};

}  // namespace

Result<FuseProbe> ProbeFuseMount(const std::string& dir, std::chrono::milliseconds limit) {
  fuse_lowlevel_ops ops{};
  ops.init = ProbeInit;
  char prog[] = "clairfs-doctor", opt[] = "-o", opts[] = "ro,fsname=clairfs-doctor";
  char* argv[] = {prog, opt, opts, nullptr};
  fuse_args args = FUSE_ARGS_INIT(3, argv);
  ProbeState state;
  StderrCapture capture;
  fuse_session* se = fuse_session_new(&args, &ops, sizeof ops, &state);
  fuse_opt_free_args(&args);
  if (se == nullptr) return Status::IOError("fuse_session_new failed: " + capture.Text());
  if (fuse_session_mount(se, dir.c_str()) != 0) {
    fuse_session_destroy(se);
    std::string said = capture.Text();
    return Status::IOError("mounting FUSE on " + dir + " failed" +
                           (said.empty() ? std::string() : ": " + said));
  }
  // The kernel queues INIT as the mount completes; answer it, nothing else.
  const auto deadline = std::chrono::steady_clock::now() + limit;
  fuse_buf buf{};
  while (!state.initialized && !fuse_session_exited(se)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fuse_session_fd(se), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    if (fuse_session_receive_buf(se, &buf) <= 0) break;
    fuse_session_process_buf(se, &buf);
  }
  std::free(buf.mem);
  fuse_session_unmount(se);
  fuse_session_destroy(se);
  if (!state.initialized) {
    return Status::Unavailable("the kernel sent no FUSE INIT within " +
                               std::to_string(limit.count()) + " ms of mounting on " + dir);
  }
  return state.probe;
}

}  // namespace clairfs::fs
