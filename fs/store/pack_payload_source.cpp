#include "fs/store/payload_source.hpp"
#include "partitioner/format/codec.hpp"

namespace clairfs::fs {

Result<size_t> PackPayloadSource::Read(uint32_t node, uint64_t offset, size_t length, char* dst) {
  // A decoder owns a zstd context and is single-thread: one per worker thread.
  thread_local format::PayloadDecoder decoder;
  const format::NodeRecord& r = manifest_->node(node);
  auto pack = store_->Pack(r.partition);
  const auto what = [&] {
    return manifest_->Path(node) + " (partition " + std::to_string(r.partition) + ", " +
           manifest_->PackName(r.partition) + ")";
  };
  // A file whose bytes cannot be had is EIO, whatever the cause (a missing
  // pack is not a missing file: the name exists), with the cause in the message.
  const auto fail = [&](const Status& st) {
    if (st.IsCorruption()) return st;
    const std::string msg = st.message().rfind(what(), 0) == 0 ? st.message()
                                                                : what() + ": " + st.message();
    return Status::IOError(msg, EIO);
  };
  if (!pack.ok()) return fail(pack.status());
  auto n = decoder.Read(**pack, format::PayloadLocation::Of(r), offset, length, dst, what());
  if (!n.ok() && n.status().IsCorruption()) {
    // A damaged copy (a staged pack, a peer's answer) is not a damaged file
    // while the dataset directory's pack is intact: read it once more there.
    auto again = store_->Reread(r.partition, *pack);
    if (again.ok() && *again != nullptr) {
      n = decoder.Read(**again, format::PayloadLocation::Of(r), offset, length, dst, what());
    }
  }
  if (!n.ok()) return fail(n.status());
  return n;
}

}  // namespace clairfs::fs
