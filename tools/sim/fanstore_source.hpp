// FanStoreSource: FanStore's design (REFERENCE.md section 2) as a policy.
// The sorted file list is cut into `partitions` contiguous partitions;
// partition p is homed on node p mod N and copied to that node's SSD before
// training starts (every node at once, from the shared file system: the
// first epoch waits for it). A read of a file homed on the reader's node
// reads that node's SSD; of another node's file, a round trip: the home's
// SSD, then the home's link. No RAM cache across epochs. Its one blocking
// server thread per node is modelled as a device shared by the requests in
// progress (the same throughput, other latencies). Single-thread.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tools/sim/job.hpp"
#include "tools/sim/shared_device.hpp"

namespace clairfs::sim {

struct NodeSpec {
  DeviceSpec ssd;   // node-local storage, one per node
  DeviceSpec link;  // a node's network link, as a sender
};

class FanStoreSource final : public DataSource {
 public:
  // `shared_fs` and `file_bytes` outlive this; partitions >= 1.
  FanStoreSource(EventLoop* loop, SharedDevice* shared_fs, const std::vector<uint64_t>* file_bytes,
                 uint32_t nodes, uint32_t partitions, const NodeSpec& node);
  void StartEpoch(uint32_t epoch) override;
  void Read(uint32_t node, uint64_t file, EventLoop::Fn done) override;
  // Seconds from the first epoch's start until every partition was copied.
  double staging_seconds() const { return staged_at_; }
  uint32_t HomeOf(uint64_t file) const;

 private:
  void Serve(uint32_t node, uint64_t file, EventLoop::Fn done);

  EventLoop* loop_;
  SharedDevice* fs_;
  const std::vector<uint64_t>* bytes_;
  uint32_t nodes_, partitions_;
  std::vector<std::unique_ptr<SharedDevice>> ssd_, link_;
  bool staged_ = false;
  double staged_at_ = 0;
  std::vector<EventLoop::Fn> held_;  // reads that came before staging ended
};

}  // namespace clairfs::sim
