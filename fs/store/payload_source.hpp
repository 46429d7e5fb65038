// PayloadSource: verified, decoded bytes of a dataset file, wherever its
// payload lives. The cache above it never sees packs or peers.
//
// LocalPayloadSource reads the packs of a PackStore; the multi-node issue adds
// a source that asks the partition's home rank and falls back to the shared
// file system. Implementations are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "fs/store/pack_store.hpp"
#include "partitioner/format/manifest.hpp"
#include "partitioner/format/status.hpp"

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

// Reads from the packs of `store` with one PayloadDecoder per thread.
class LocalPayloadSource final : public PayloadSource {
 public:
  LocalPayloadSource(std::shared_ptr<const format::Manifest> manifest, PackStore* store)
      : manifest_(std::move(manifest)), store_(store) {}
  Result<size_t> Read(uint32_t node, uint64_t offset, size_t length, char* dst) override;

 private:
  const std::shared_ptr<const format::Manifest> manifest_;
  PackStore* const store_;  // not owned
};

}  // namespace clairfs::fs
