#include "partitioner/format/pack_file.hpp"

#include <cerrno>
#include <cstring>

#include "partitioner/format/checksum.hpp"

namespace clairfs::format {

PackHeader MakePackHeader(uint64_t dataset_id, uint32_t p) {
  PackHeader h{};
  std::memcpy(h.magic, kPackMagic, sizeof h.magic);
  h.version = kFormatVersion;
  h.partition = p;
  h.dataset_id = dataset_id;
  return h;
}

PackHeader MakePackHeader(const Manifest& manifest, uint32_t p) {
  return MakePackHeader(manifest.header().dataset_id, p);
}

Result<std::unique_ptr<PosixRandomAccessFile>> OpenPack(const std::string& dir,
                                                        const Manifest& manifest, uint32_t p) {
  const std::string path = dir + "/" + manifest.PackName(p);
  auto file = PosixRandomAccessFile::Open(path);
  if (!file.ok()) {
    if (file.status().IsNotFound()) {
      return Status::NotFound(path + ": partition " + std::to_string(p) + " pack is missing");
    }
    return file.status();
  }
  const uint64_t want = manifest.partition(p).pack_bytes;
  if ((*file)->size() != want) {
    return Status::Corruption(path + ": pack is " + std::to_string((*file)->size()) +
                              " bytes, the manifest says " + std::to_string(want));
  }
  PackHeader h;
  CLAIRFS_RETURN_IF_ERROR((*file)->ReadExact(0, sizeof h, &h));
  PackHeader expect = MakePackHeader(manifest, p);
  if (std::memcmp(&h, &expect, sizeof h) != 0) {
    return Status::Corruption(path +
                              ": pack header does not match the manifest (another pack "
                              "run, or damaged)");
  }
  return std::move(file).value();
}

Status VerifyPackChecksum(const std::string& dir, const Manifest& manifest, uint32_t p,
                          const std::function<bool()>& cancelled) {
  auto file = OpenPack(dir, manifest, p);
  if (!file.ok()) return file.status();
  StreamingChecksum sum;
  std::vector<char> buf(8u << 20);
  const uint64_t size = (*file)->size();
  for (uint64_t off = 0; off < size;) {
    if (cancelled && cancelled()) return Status::IOError("verification cancelled", ECANCELED);
    size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), size - off));
    CLAIRFS_RETURN_IF_ERROR((*file)->ReadExact(off, n, buf.data()));
    sum.Update(buf.data(), n);
    off += n;
  }
  if (sum.Digest() != manifest.partition(p).pack_checksum) {
    return Status::Corruption((*file)->name() + ": pack checksum mismatch");
  }
  return Status::Ok();
}

}  // namespace clairfs::format
