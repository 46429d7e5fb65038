// PayloadSource: verified, decoded bytes of a dataset file, wherever its
// payload lives. The cache above it never sees packs or peers.
//
// PackPayloadSource decodes the stored bytes a PackStore returns, whichever
// store that is (the dataset directory, or the node's staged copy, its peers
// and then the dataset directory). Implementations are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/status.hpp"
#include "fs/store/pack_store.hpp"
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
// per thread.
class PackPayloadSource final : public PayloadSource {
 public:
  PackPayloadSource(std::shared_ptr<const format::Manifest> manifest, PackStore* store)
      : manifest_(std::move(manifest)), store_(store) {}
  Result<size_t> Read(uint32_t node, uint64_t offset, size_t length, char* dst) override;

 private:
  const std::shared_ptr<const format::Manifest> manifest_;
  PackStore* const store_;  // not owned
};

}  // namespace clairfs::fs
