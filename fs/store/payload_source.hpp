// PayloadSource: verified, decoded bytes of a dataset file, wherever its
// payload lives. The cache above it never sees packs or peers.
//
// PackPayloadSource decodes the stored bytes a PackStore returns, whichever
// store that is (the dataset directory, or the node's staged copy, its peers
// and then the dataset directory). It keeps each framed file's frame table once
// verified, so a frame costs one read from then on (for a peer's pack: one
// round trip, and the first frame brings the table along). A framed file read
// frame after frame has the pack's next frames_ahead frames read ahead
// (RandomAccessFile::FetchAhead, frame by frame: the kernel reads a local or
// dataset-directory pack into its page cache in the background; a peer's pack
// asks its owner for them at once, PeerAhead).
// Implementations are thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "base/mutex.hpp"
#include "base/status.hpp"
#include "fs/store/pack_store.hpp"
#include "partitioner/format/codec.hpp"
#include "partitioner/format/manifest.hpp"

namespace clairfs::fs {

class PayloadSource {
 public:
  virtual ~PayloadSource() = default;
  // Reads bytes [offset, offset + length) of file node `node`, clipped to its
  // size, into `dst`; returns how many. Bytes are returned only after their
  // checksum matched: a mismatch or undecodable frame is Corruption whose
  // message names the file and its partition.
  virtual Result<size_t> Read(uint32_t node, uint64_t offset, size_t length, char* dst) = 0;
};

// Reads and verifies the stored bytes `store` returns, with one PayloadDecoder
// per thread. Lock order: mu_ only, never held across a read.
class PackPayloadSource final : public PayloadSource {
 public:
  // Frame tables kept, in bytes (about 24 per frame): the tables of ~700 GB of
  // framed files at 1 MiB frames. Past it the oldest table goes first.
  static constexpr size_t kTableCacheBytes = 16u << 20;
  PackPayloadSource(std::shared_ptr<const format::Manifest> manifest, PackStore* store,
                    size_t table_cache_bytes = kTableCacheBytes,
                    uint64_t frames_ahead = kFramesAhead)
      : manifest_(std::move(manifest)),
        store_(store),
        table_cache_bytes_(table_cache_bytes),
        frames_ahead_(frames_ahead) {}
  Result<size_t> Read(uint32_t node, uint64_t offset, size_t length, char* dst) override;
  // Read-ahead hints given (reads that asked for frames ahead), and the pack
  // bytes of the frames they asked for, each frame once per pass.
  uint64_t ahead_hints() const { return ahead_hints_.load(std::memory_order_relaxed); }
  uint64_t ahead_bytes() const { return ahead_bytes_.load(std::memory_order_relaxed); }

  static constexpr uint64_t kFramesAhead = 4;      // the default (config frames_ahead)
  static constexpr size_t kReadersTracked = 4096;  // files whose next frame is remembered

 private:
  // After a read of [offset, offset + n) of framed `node`: when it continues
  // the file's earlier reads (it begins at the frame they reached, or at most
  // frames_ahead before it), hints the next frames not hinted yet.
  void ReadAhead(uint32_t node, const format::RandomAccessFile& pack,
                 const format::PayloadLocation& loc, const format::FrameTable& table,
                 uint64_t offset, size_t n) CLAIRFS_EXCLUDES(mu_);
  std::shared_ptr<const format::FrameTable> Table(uint32_t node);
  void Keep(uint32_t node, std::shared_ptr<const format::FrameTable> table);

  const std::shared_ptr<const format::Manifest> manifest_;
  PackStore* const store_;  // not owned
  const size_t table_cache_bytes_;
  const uint64_t frames_ahead_;
  Mutex mu_;
  // By node.
  std::unordered_map<uint32_t, std::shared_ptr<const format::FrameTable>> tables_
      CLAIRFS_GUARDED_BY(mu_);
  std::deque<uint32_t> table_order_ CLAIRFS_GUARDED_BY(mu_);  // nodes of tables_, oldest first
  struct Reader {
    uint64_t next = 0;        // the frame after the file's last read
    uint64_t hinted_end = 0;  // frames before it were hinted already
  };
  std::unordered_map<uint32_t, Reader> next_frame_ CLAIRFS_GUARDED_BY(mu_);  // by node
  std::atomic<uint64_t> ahead_hints_{0}, ahead_bytes_{0};
  size_t table_bytes_ CLAIRFS_GUARDED_BY(mu_) = 0;
};

}  // namespace clairfs::fs
