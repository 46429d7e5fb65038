#include "fs/clairfsd/area_peers.hpp"

#include <algorithm>
#include <span>
#include <string_view>

namespace clairfs::fs {

void ClusterAreaPeers::Publish(std::string notice) {
  // Refused only when stopping, oversized (a path is at most 4 KiB), or for a
  // peer whose link stalled with 65,536 notices queued
  // (`cluster.network.notices_dropped`): then lost like a notice to a dead
  // peer, and its file is found in persist once drained.
  (void)transport_->Publish(std::span<const char>(notice.data(), notice.size()));
}

Result<std::string> ClusterAreaPeers::Read(int home, uint64_t ino, uint64_t offset, size_t size) {
  PackRead read;
  read.partition = kAreaPartition;
  read.offset = offset;
  read.length = static_cast<uint32_t>(std::min<size_t>(size, kMaxReadBytes));
  read.frame_at = ino;
  std::string out;
  Status st = ReadSync(*transport_, home, read, std::chrono::steady_clock::now() + timeout_,
                       [&out](std::span<const char> bytes) {
                         out.assign(bytes.data(), bytes.size());
                         return Status::Ok();
                       });
  if (!st.ok()) return st;
  return out;
}

void ConnectArea(Cluster& cluster, WriteArea* area, std::chrono::milliseconds timeout,
                 std::unique_ptr<ClusterAreaPeers>* peers) {
  if (cluster.transport() == nullptr) return;
  *peers = std::make_unique<ClusterAreaPeers>(cluster.transport(), timeout);
  area->Connect(peers->get(), cluster.rank());
  cluster.ServeArea(
      [area](const PackRead& r) -> Result<std::vector<char>> {
        auto got = area->ServePeer(r.frame_at, r.offset, r.length);
        if (!got.ok()) return got.status();
        return std::vector<char>(got->begin(), got->end());
      },
      [area](int peer, std::span<const char> notice) {
        area->QueueNotice(peer, std::string_view(notice.data(), notice.size()));
      });
}

}  // namespace clairfs::fs
