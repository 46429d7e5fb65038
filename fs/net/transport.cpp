#include "fs/net/transport.hpp"

#include <future>
#include <memory>

namespace clairfs::fs {

Result<std::vector<char>> ReadSync(Transport& transport, int peer, const PackRead& read,
                                   SteadyClock::time_point deadline) {
  auto promise = std::make_shared<std::promise<Result<std::vector<char>>>>();
  auto future = promise->get_future();
  transport.Read(peer, read, deadline,
                 [promise](Result<std::vector<char>> r) { promise->set_value(std::move(r)); });
  // The transport completes every read by its deadline; the margin only guards
  // against a transport bug turning into a hung FUSE worker.
  if (future.wait_until(deadline + std::chrono::seconds(5)) != std::future_status::ready) {
    return Status::IOError("peer " + std::to_string(peer) + ": read never completed", ETIMEDOUT);
  }
  return future.get();
}

}  // namespace clairfs::fs
