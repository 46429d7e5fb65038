#include "fs/store/payload_source.hpp"
#include "partitioner/format/codec.hpp"

namespace clairfs::fs {

Result<size_t> LocalPayloadSource::Read(uint32_t node, uint64_t offset, size_t length, char* dst) {
  // A decoder owns a zstd context and is single-thread: one per worker thread.
  thread_local format::PayloadDecoder decoder;
  const format::NodeRecord& r = manifest_->node(node);
  auto pack = store_->Pack(r.partition);
  const auto what = [&] {
    return manifest_->Path(node) + " (partition " + std::to_string(r.partition) + ", " +
           manifest_->PackName(r.partition) + ")";
  };
  if (!pack.ok()) {
    const Status& st = pack.status();
    std::string msg = what() + ": " + st.message();
    return st.IsCorruption() ? Status::Corruption(msg) : Status::IOError(msg, st.err());
  }
  return decoder.Read(**pack, format::PayloadLocation::Of(r), offset, length, dst, what());
}

}  // namespace clairfs::fs
