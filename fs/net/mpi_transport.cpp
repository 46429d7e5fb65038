#include "fs/net/mpi_transport.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <mutex>

#include "base/thread_name.hpp"

namespace clairfs::fs {
namespace {

std::string MpiError(int code) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, buf, &len);
  return std::string(buf, static_cast<size_t>(len));
}

// Runs `call` (an MPI call that waits for every rank) and, when it has not
// returned after `limit`, logs why and ends the process with `exit_code`:
// such a call cannot be withdrawn, and a rank that never comes (not started,
// killed, stopped) would otherwise keep this one in it forever.
template <typename Call>
void Bounded(Call call, std::chrono::milliseconds limit, const std::string& who, const char* what,
             const char* cause, int exit_code) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread watchdog([&] {
    std::unique_lock lk(mu);
    if (cv.wait_for(lk, limit, [&] { return done; })) return;
    std::fprintf(stderr, "%s: %s did not return within %lld ms (%s); exiting without it\n",
                 who.c_str(), what, static_cast<long long>(limit.count()), cause);
    std::fflush(stderr);
    std::_Exit(exit_code);
  });
  call();
  {
    std::lock_guard lk(mu);
    done = true;
  }
  cv.notify_one();
  watchdog.join();
}

}  // namespace

bool LaunchedByMpi() {
  for (const char* v : {"PMI_RANK", "PMI_FD", "PMIX_RANK", "MPI_LOCALRANKID"}) {
    if (std::getenv(v) != nullptr) return true;
  }
  return false;
}

std::string MpiBuiltWith() {
#if defined(MPICH_VERSION)
  return std::string("MPICH ") + MPICH_VERSION;
#elif defined(OMPI_MAJOR_VERSION)
  return "Open MPI " + std::to_string(OMPI_MAJOR_VERSION) + "." +
         std::to_string(OMPI_MINOR_VERSION) + "." + std::to_string(OMPI_RELEASE_VERSION);
#else
  return "MPI " + std::to_string(MPI_VERSION) + "." + std::to_string(MPI_SUBVERSION);
#endif
}

std::string MpiRunsWith() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  if (MPI_Get_library_version(text, &length) != MPI_SUCCESS) return "";
  return std::string(text, static_cast<size_t>(length));
}

Result<std::unique_ptr<MpiTransport>> MpiTransport::Init(int* argc, char*** argv,
                                                         std::chrono::milliseconds limit) {
  int provided = 0;
  int rc = MPI_SUCCESS;
  Bounded([&] { rc = MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided); }, limit,
          "clairfsd", "MPI_Init", "a rank of the job never started, or died or hung while starting",
          1);
  if (rc != MPI_SUCCESS) return Status::IOError("MPI_Init_thread: " + MpiError(rc));
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    return Status::Unsupported("the MPI library does not provide MPI_THREAD_SERIALIZED");
  }
  // Errors come back as codes: a dead peer must not end this daemon.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return std::unique_ptr<MpiTransport>(new MpiTransport(rank, size));
}

MpiTransport::~MpiTransport() { Finalize(std::chrono::seconds(5), 1); }

void MpiTransport::Finalize(std::chrono::milliseconds limit, int exit_code) {
  Stop();
  if (finalized_) return;
  finalized_ = true;
  if (skip_finalize_) return;
  // MPI_Finalize synchronises with every rank: one that died unfinalized
  // (SIGKILL, a crash) leaves the others waiting in it forever. Bound it.
  Bounded([] { MPI_Finalize(); }, limit, "clairfsd[" + std::to_string(rank_) + "]", "MPI_Finalize",
          "a peer ended without finalizing", exit_code);
}

// Waits for a non-blocking collective until `deadline`. MPICH's blocking
// collectives would wait forever for a rank that never comes (and spin while
// they wait); a pending request cannot be withdrawn, so after a timeout MPI
// cannot be finalized cleanly and the caller's process must exit without it.
Status MpiTransport::Complete(void* request, const char* what,
                              std::chrono::steady_clock::time_point deadline) {
  auto* req = static_cast<MPI_Request*>(request);
  auto pause = std::chrono::microseconds(10);
  for (;;) {
    int done = 0;
    const int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return Status::IOError(std::string(what) + ": " + MpiError(rc));
    if (done) return Status::Ok();
    if (std::chrono::steady_clock::now() >= deadline) {
      skip_finalize_ = true;
      return Status::IOError(std::string(what) + ": not every rank took part in time", ETIMEDOUT);
    }
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(5));
  }
}

Status MpiTransport::Broadcast(std::vector<char>* bytes, int root,
                               std::chrono::steady_clock::time_point deadline) {
  uint64_t n = bytes->size();
  MPI_Request req;
  int rc = MPI_Ibcast(&n, 1, MPI_UINT64_T, root, MPI_COMM_WORLD, &req);
  if (rc != MPI_SUCCESS) return Status::IOError("broadcast: " + MpiError(rc));
  CLAIRFS_RETURN_IF_ERROR(Complete(&req, "broadcast", deadline));
  bytes->resize(n);
  // MPI counts are ints: send in chunks below 2 GiB.
  constexpr uint64_t kChunk = 1u << 30;
  for (uint64_t off = 0; off < n; off += kChunk) {
    const int len = static_cast<int>(std::min(kChunk, n - off));
    rc = MPI_Ibcast(bytes->data() + off, len, MPI_BYTE, root, MPI_COMM_WORLD, &req);
    if (rc != MPI_SUCCESS) return Status::IOError("broadcast: " + MpiError(rc));
    CLAIRFS_RETURN_IF_ERROR(Complete(&req, "broadcast", deadline));
  }
  return Status::Ok();
}

Result<std::vector<int>> MpiTransport::Gather(int value,
                                              std::chrono::steady_clock::time_point deadline) {
  std::vector<int> all(static_cast<size_t>(size_));
  MPI_Request req;
  const int rc = MPI_Iallgather(&value, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD, &req);
  if (rc != MPI_SUCCESS) return Status::IOError("gather: " + MpiError(rc));
  CLAIRFS_RETURN_IF_ERROR(Complete(&req, "gather", deadline));
  return all;
}

Status MpiTransport::Start(ServeFn serve, int server_threads, ServeNowFn serve_now) {
  endpoint_ = std::make_unique<Endpoint>(rank_, size_, std::move(serve), server_threads,
                                         std::move(serve_now), std::move(on_notice_));
  progress_ = std::thread([this] {
    NameThread("clairfs-mpi");
    Progress();
  });
  return Status::Ok();
}

void MpiTransport::Read(int peer, const PackRead& read,
                        std::chrono::steady_clock::time_point deadline, ReplyFn done) {
  if (!endpoint_) {
    done(Status::IOError("transport not started", ESHUTDOWN));
    return;
  }
  endpoint_->Read(peer, read, deadline, std::move(done));
}

Status MpiTransport::Publish(std::span<const char> notice) {
  CLAIRFS_RETURN_IF_ERROR(CheckNoticeSize(notice));
  if (!endpoint_ || stop_) return Status::IOError("transport not running", ECANCELED);
  // Wakes the progress thread, as a queued read does.
  return NoticeDrops(endpoint_->Publish(notice));
}

Status MpiTransport::Send(int peer, std::span<const char> notice) {
  CLAIRFS_RETURN_IF_ERROR(CheckSend(rank_, size_, peer, notice));
  if (!endpoint_ || stop_) return Status::IOError("transport not running", ECANCELED);
  return NoticeDrops(endpoint_->Send(peer, notice));
}

Status MpiTransport::Barrier(std::chrono::steady_clock::time_point deadline) {
  if (!endpoint_) return Status::IOError("transport not started", ESHUTDOWN);
  int idle = 0;
  if (!barrier_.compare_exchange_strong(idle, 1)) {
    return Status::InvalidArgument("a barrier is already in progress");
  }
  while (barrier_ != 3) {
    if (std::chrono::steady_clock::now() >= deadline) {
      // The posted MPI_Ibarrier stays pending: MPI cannot withdraw it. The
      // caller is shutting down anyway; finalize would wait for the missing rank.
      skip_finalize_ = true;
      return Status::IOError("barrier: not every rank arrived in time", ETIMEDOUT);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  barrier_ = 0;
  return Status::Ok();
}

void MpiTransport::Progress() {
  struct Send {
    MPI_Request request;
    std::vector<char> bytes;  // must outlive the send
  };
  std::list<Send> sends;
  auto reap_sends = [&sends] {  // drops the sends MPI has finished with
    for (auto it = sends.begin(); it != sends.end();) {
      int done = 0;
      if (MPI_Test(&it->request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done) {
        it = sends.erase(it);
      } else {
        ++it;
      }
    }
  };
  std::vector<char> buf;
  MPI_Request barrier = MPI_REQUEST_NULL;
  auto idle = std::chrono::microseconds(20);
  auto last_activity = std::chrono::steady_clock::now();
  while (!stop_) {
    bool busy = false;
    for (auto& m : endpoint_->TakeOutgoing()) {
      sends.push_back({MPI_REQUEST_NULL, std::move(m.bytes)});
      Send& s = sends.back();
      if (MPI_Isend(s.bytes.data(), static_cast<int>(s.bytes.size()), MPI_BYTE, m.peer,
                    static_cast<int>(m.kind), MPI_COMM_WORLD, &s.request) != MPI_SUCCESS) {
        sends.pop_back();  // the read times out on the other side's deadline
      }
      busy = true;
    }
    reap_sends();
    for (;;) {
      int flag = 0;
      MPI_Message msg;
      MPI_Status st;
      if (MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg, &st) !=
              MPI_SUCCESS ||
          !flag) {
        break;
      }
      int count = 0;
      MPI_Get_count(&st, MPI_BYTE, &count);
      buf.resize(static_cast<size_t>(count));
      if (MPI_Mrecv(buf.data(), count, MPI_BYTE, &msg, &st) != MPI_SUCCESS) continue;
      if (st.MPI_TAG == static_cast<int>(MessageKind::kRequests) ||
          st.MPI_TAG == static_cast<int>(MessageKind::kReplies) ||
          st.MPI_TAG == static_cast<int>(MessageKind::kNotices)) {
        endpoint_->Deliver(st.MPI_SOURCE, static_cast<MessageKind>(st.MPI_TAG), buf.data(),
                           buf.size());
      }
      busy = true;
    }
    if (barrier_ == 1 && MPI_Ibarrier(MPI_COMM_WORLD, &barrier) == MPI_SUCCESS) barrier_ = 2;
    if (barrier_ == 2) {
      int done = 0;
      if (MPI_Test(&barrier, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) barrier_ = 3;
    }
    const auto now = std::chrono::steady_clock::now();
    const auto next = endpoint_->ExpireDeadlines(now);
    if (busy || !sends.empty()) {
      idle = std::chrono::microseconds(20);
      last_activity = now;
      if (busy) continue;
    }
    // Nothing moved: wait for local work (a queued read or notice wakes the wait at
    // once). Incoming messages are only seen by polling, and MPICH's blocking
    // waits spin, so poll: every 20 us during a burst of reads, then ever less
    // often as the quiet lasts - 1/50 of it, at most 20 ms. A peer's first
    // request after a quiet spell then waits at most 2% of that spell, and a
    // quiet rank wakes 50 times a second instead of stealing the training
    // processes' CPU (each wake-up is a context switch on their cores).
    endpoint_->WaitForOutgoing(std::min(next, now + idle));
    idle = std::clamp<std::chrono::microseconds>(
        std::chrono::duration_cast<std::chrono::microseconds>(now - last_activity) / 50,
        std::chrono::microseconds(20), std::chrono::milliseconds(20));
  }
  // Let replies already handed to MPI finish (a peer may be reading them out of
  // this process's memory), for at most two seconds.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!sends.empty() && std::chrono::steady_clock::now() < give_up) {
    reap_sends();
  }
  for (auto& s : sends) {
    MPI_Cancel(&s.request);
    MPI_Request_free(&s.request);
  }
  if (!sends.empty()) skip_finalize_ = true;
}

void MpiTransport::Stop() {
  if (stopped_ || !endpoint_) return;
  stopped_ = true;
  stop_ = true;
  if (progress_.joinable()) progress_.join();
  endpoint_->Stop();
}

void MpiTransport::Abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

}  // namespace clairfs::fs
