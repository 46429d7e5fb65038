// The writable area's link to the other daemons of the job: its notices go
// out as transport notices, and its reads of a peer's file as reads of
// kAreaPartition, answered there by WriteArea::ServePeer.
#pragma once

#include <chrono>

#include "fs/dist/cluster.hpp"
#include "fs/vfs/write_area.hpp"

namespace clairfs::fs {

class ClusterAreaPeers : public WriteAreaPeers {
 public:
  // `timeout`: how long a read of a peer's file may take (peer_timeout_ms)
  // before the area reads persist instead.
  ClusterAreaPeers(Transport* transport, std::chrono::milliseconds timeout)
      : transport_(transport), timeout_(timeout) {}
  void Publish(std::string notice) override;
  Result<std::string> Read(int home, uint64_t ino, uint64_t offset, size_t size) override;

 private:
  Transport* const transport_;
  const std::chrono::milliseconds timeout_;
};

// Connects `area` to the job's other daemons (nothing for a job of one rank).
// Before cluster.Serve(); `peers` must outlive the transport's threads.
void ConnectArea(Cluster& cluster, WriteArea* area, std::chrono::milliseconds timeout,
                 std::unique_ptr<ClusterAreaPeers>* peers);

}  // namespace clairfs::fs
