// Opening a partition pack and checking that it belongs to the manifest.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "partitioner/format/file_io.hpp"
#include "partitioner/format/manifest.hpp"

namespace clairfs::format {

// The header every pack starts with, for partition p of `manifest`.
PackHeader MakePackHeader(const Manifest& manifest, uint32_t p);
PackHeader MakePackHeader(uint64_t dataset_id, uint32_t p);

// Opens DIR/part-NNNNN for partition p and checks its size and header against
// the manifest: a pack from another run, a truncated or extended pack, or a
// flipped header byte is Corruption naming the pack. Payload bytes are checked
// later, per read, by PayloadDecoder.
Result<std::unique_ptr<PosixRandomAccessFile>> OpenPack(const std::string& dir,
                                                        const Manifest& manifest, uint32_t p);

// Checks a whole pack against the checksum in the manifest (streaming read).
// `cancelled`, when given, is asked between reads: true stops the check
// (ECANCELED).
Status VerifyPackChecksum(const std::string& dir, const Manifest& manifest, uint32_t p,
                          const std::function<bool()>& cancelled = {});

}  // namespace clairfs::format
