#include "fs/net/transport.hpp"

#include <condition_variable>
#include <memory>
#include <mutex>

namespace clairfs::fs {

Status ReadSync(Transport& transport, int peer, const PackRead& read,
                SteadyClock::time_point deadline,
                const std::function<Status(std::span<const char>)>& take) {
  struct Shared {
    std::mutex mu;  // guards all below; held while `take` runs
    std::condition_variable cv;
    const std::function<Status(std::span<const char>)>* take;
    bool done = false, abandoned = false;
    Status status;
  };
  auto shared = std::make_shared<Shared>();
  shared->take = &take;
  transport.Read(peer, read, deadline, [shared](Result<std::span<const char>> r) {
    std::lock_guard lk(shared->mu);
    if (shared->abandoned) return;  // the caller is gone, and `take` with it
    shared->status = r.ok() ? (*shared->take)(*r) : r.status();
    shared->done = true;
    shared->cv.notify_all();
  });
  std::unique_lock lk(shared->mu);
  // The transport completes every read by its deadline; the margin only guards
  // against a transport bug turning into a hung FUSE worker.
  if (!shared->cv.wait_until(lk, deadline + std::chrono::seconds(5),
                             [&] { return shared->done; })) {
    shared->abandoned = true;
    return Status::IOError("peer " + std::to_string(peer) + ": read never completed", ETIMEDOUT);
  }
  return shared->status;
}

Result<std::vector<char>> ReadSync(Transport& transport, int peer, const PackRead& read,
                                   SteadyClock::time_point deadline) {
  std::vector<char> out;
  Status st = ReadSync(transport, peer, read, deadline, [&out](std::span<const char> bytes) {
    out.assign(bytes.begin(), bytes.end());
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

}  // namespace clairfs::fs
