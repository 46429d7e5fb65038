#include "fs/net/transport.hpp"

#include <memory>
#include <string>

#include "base/mutex.hpp"

namespace clairfs::fs {

Status CheckNoticeSize(std::span<const char> notice) {
  if (notice.empty() || notice.size() > kMaxNoticeBytes) {
    return Status::InvalidArgument("a notice of " + std::to_string(notice.size()) +
                                   " bytes (1 to " + std::to_string(kMaxNoticeBytes) + ")");
  }
  return Status::Ok();
}

Status CheckSend(int rank, int size, int peer, std::span<const char> notice) {
  if (peer < 0 || peer >= size || peer == rank) {
    return Status::InvalidArgument("a notice to rank " + std::to_string(peer) + " from rank " +
                                   std::to_string(rank) + " of " + std::to_string(size));
  }
  return CheckNoticeSize(notice);
}

Status NoticeDrops(int peers) {
  if (peers == 0) return Status::Ok();
  return Status::IOError(
      "a notice dropped for " + std::to_string(peers) + " peer(s) whose notice queue is full",
      EAGAIN);
}

Status ReadSync(Transport& transport, int peer, const PackRead& read,
                std::chrono::steady_clock::time_point deadline,
                const std::function<Status(std::span<const char>)>& take) {
  struct Shared {
    Mutex mu;  // held while `take` runs
    CondVar cv;
    const std::function<Status(std::span<const char>)>* take CLAIRFS_GUARDED_BY(mu);
    bool done CLAIRFS_GUARDED_BY(mu) = false;
    bool abandoned CLAIRFS_GUARDED_BY(mu) = false;
    Status status CLAIRFS_GUARDED_BY(mu);
  };
  auto shared = std::make_shared<Shared>();
  {
    MutexLock lock(&shared->mu);
    shared->take = &take;
  }
  transport.Read(peer, read, deadline, [shared](Result<std::span<const char>> r) {
    MutexLock lock(&shared->mu);
    if (shared->abandoned) return;  // the caller is gone, and `take` with it
    shared->status = r.ok() ? (*shared->take)(*r) : r.status();
    shared->done = true;
    shared->cv.NotifyAll();
  });
  MutexLock lock(&shared->mu);
  // The transport completes every read by its deadline; the margin only guards
  // against a transport bug turning into a hung FUSE worker.
  const auto give_up = deadline + std::chrono::seconds(5);
  while (!shared->done && shared->cv.WaitUntil(&lock, give_up)) {
  }
  if (!shared->done) {
    shared->abandoned = true;
    return Status::IOError("peer " + std::to_string(peer) + ": read never completed", ETIMEDOUT);
  }
  return shared->status;
}

Result<std::vector<char>> ReadSync(Transport& transport, int peer, const PackRead& read,
                                   std::chrono::steady_clock::time_point deadline) {
  std::vector<char> out;
  Status st = ReadSync(transport, peer, read, deadline, [&out](std::span<const char> bytes) {
    out.assign(bytes.begin(), bytes.end());
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

}  // namespace clairfs::fs
