// The one checksum of the format: XXH3-64 (libxxhash). Thread-safe.
#pragma once

#include <xxhash.h>

#include <cstddef>
#include <cstdint>

namespace clairfs::format {

inline uint64_t Checksum(const void* data, size_t size) { return XXH3_64bits(data, size); }

// Incremental form, for a pack file hashed as it is written.
class StreamingChecksum {
 public:
  StreamingChecksum() : state_(XXH3_createState()) { XXH3_64bits_reset(state_); }
  ~StreamingChecksum() { XXH3_freeState(state_); }
  StreamingChecksum(const StreamingChecksum&) = delete;
  StreamingChecksum& operator=(const StreamingChecksum&) = delete;

  void Update(const void* data, size_t size) { XXH3_64bits_update(state_, data, size); }
  uint64_t Digest() const { return XXH3_64bits_digest(state_); }

 private:
  XXH3_state_t* state_;
};

}  // namespace clairfs::format
