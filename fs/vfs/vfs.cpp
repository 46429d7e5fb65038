#include "fs/vfs/vfs.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "fs/vfs/inode.hpp"

namespace clairfs::fs {
namespace {

Status NoEntry(uint64_t ino) { return Status::NotFound("inode " + std::to_string(ino)); }

}  // namespace

Vfs::Vfs(std::shared_ptr<const format::Manifest> manifest, PayloadSource* source, RamCache* cache,
         Stats* stats, VfsOptions options)
    : manifest_(std::move(manifest)),
      stats_(stats),
      cache_(cache),
      options_(std::move(options)),
      decline_open_(options_.decline_open),
      writes_(options_.writes),
      reader_(manifest_, source, cache, stats),
      control_(
          InodeOfNode(manifest_->node_count()),
          [this] {
            const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count();
            const double up = static_cast<double>(now - control_.start_ns()) / 1e9;
            clairfs::JsonWriter w(/*break_depth=*/2);
            w.BeginObject();
            WriteDataPathStats(w, *stats_, cache_->Snapshot(), up);
            for (const auto& [name, section] : options_.stats_sections) {
              w.BeginObject(name);
              section(w);
              w.EndObject();
            }
            w.EndObject();
            return w.str() + "\n";
          },
          options_.config_text, options_.report_text) {
  subdirs_.assign(manifest_->node_count(), 0);
  for (uint32_t i = 1; i < manifest_->node_count(); ++i) {
    if (manifest_->IsDirectory(i)) ++subdirs_[manifest_->node(i).parent];
  }
}

uint64_t Vfs::FirstFreeIno(const format::Manifest& manifest) {
  return InodeOfNode(manifest.node_count()) + ControlFiles::kCount;
}

Attr Vfs::NodeAttr(uint32_t node) const {
  const format::NodeRecord& r = manifest_->node(node);
  Attr a;
  a.ino = InodeOfNode(node);
  // On a writable mount the kernel asks the modes, not the mount's ro flag:
  // the dataset's have no write bits.
  a.mode = writes_ != nullptr ? r.mode & ~0222u : r.mode;
  a.uid = options_.uid;
  a.gid = options_.gid;
  a.mtime_ns = r.mtime_ns;
  if (manifest_->IsDirectory(node)) {
    a.nlink = 2 + subdirs_[node];
    a.size = 4096;
  } else {
    a.size = r.size;
  }
  return a;
}

Attr Vfs::ControlAttr(ControlFiles::Index i, bool refresh) {
  Attr a;
  a.ino = control_.ino(i);
  a.uid = options_.uid;
  a.gid = options_.gid;
  a.cacheable = false;
  if (i == ControlFiles::kDir) {
    a.mode = S_IFDIR | 0555;
    a.nlink = 2;
    a.size = 4096;
    a.mtime_ns = control_.start_ns();
    return a;
  }
  a.mode = S_IFREG | 0444;
  BlockRef content = refresh ? control_.Refresh(i, &a.mtime_ns) : control_.Current(i, &a.mtime_ns);
  a.size = content->size;
  return a;
}

Result<Attr> Vfs::Lookup(uint64_t parent, std::string_view name) {
  Stats::Add(stats_->lookups, 1);
  if (parent == root_ino() && name == ControlFiles::kDirName) {
    return ControlAttr(ControlFiles::kDir, false);
  }
  if (parent == root_ino() && writes_ != nullptr && name == writes_->name()) {
    return writes_->RootEntry();
  }
  if (InArea(parent)) return writes_->Lookup(parent, name);
  if (parent == control_.ino(ControlFiles::kDir)) {
    ControlFiles::Index i = control_.FileNamed(name);
    if (i == ControlFiles::kCount) return Status::NotFound(std::string(name));
    return ControlAttr(i, /*refresh=*/true);
  }
  if (control_.Owns(parent)) return Status::IOError("not a directory", ENOTDIR);
  if (!IsNode(parent)) return NoEntry(parent);
  const uint32_t dir = static_cast<uint32_t>(parent - 1);
  if (!manifest_->IsDirectory(dir)) return Status::IOError("not a directory", ENOTDIR);
  auto child = manifest_->Lookup(dir, name);
  if (!child) return Status::NotFound(std::string(name));
  return NodeAttr(*child);
}

Result<Attr> Vfs::GetAttr(uint64_t ino) {
  Stats::Add(stats_->getattrs, 1);
  if (InArea(ino)) return writes_->GetAttr(ino);
  if (control_.Owns(ino)) {
    if (!control_.Present(control_.IndexOf(ino))) return NoEntry(ino);
    return ControlAttr(control_.IndexOf(ino), false);
  }
  if (!IsNode(ino)) return NoEntry(ino);
  return NodeAttr(NodeOfInode(ino));
}

Result<OpenReply> Vfs::OpenDir(uint64_t ino) {
  if (InArea(ino)) {
    CLAIRFS_RETURN_IF_ERROR(writes_->CheckOpen(ino, /*dir=*/true));
    OpenReply reply;
    reply.decline = options_.decline_opendir;
    reply.keep_cache = false;
    reply.cache_listing = false;
    return reply;
  }
  CLAIRFS_RETURN_IF_ERROR(CheckDir(ino));
  Stats::Add(stats_->opendirs, 1);
  OpenReply reply;
  reply.decline = options_.decline_opendir;
  return reply;
}

Status Vfs::CheckDir(uint64_t ino) const {
  if (ino == control_.ino(ControlFiles::kDir)) return Status::Ok();
  if (control_.Owns(ino)) return Status::IOError("not a directory", ENOTDIR);
  if (!IsNode(ino)) return NoEntry(ino);
  if (!manifest_->IsDirectory(NodeOfInode(ino))) {
    return Status::IOError("not a directory", ENOTDIR);
  }
  return Status::Ok();
}

Status Vfs::ReadControlDir(uint64_t offset, const DirEmit& emit) {
  std::vector<ControlFiles::Index> files;  // by name
  for (ControlFiles::Index f :
       {ControlFiles::kConfig, ControlFiles::kReport, ControlFiles::kStats}) {
    if (control_.Present(f)) files.push_back(f);
  }
  for (uint64_t i = offset; i < 2 + files.size(); ++i) {
    Attr a;
    std::string_view name;
    if (i == 0) {
      a = ControlAttr(ControlFiles::kDir, false);
      name = ".";
    } else if (i == 1) {
      a = NodeAttr(0);
      name = "..";
    } else {
      a = ControlAttr(files[i - 2], false);
      name = ControlFiles::Name(files[i - 2]);
    }
    if (!emit(name, a, i + 1)) break;
  }
  return Status::Ok();
}

Status Vfs::ReadDir(uint64_t ino, uint64_t offset, const DirEmit& emit, bool plus) {
  Stats::Add(stats_->readdirs, 1);
  if (ino == control_.ino(ControlFiles::kDir)) return ReadControlDir(offset, emit);
  if (InArea(ino)) return writes_->ReadDir(ino, offset, plus, emit);
  CLAIRFS_RETURN_IF_ERROR(CheckDir(ino));
  const uint32_t dir = NodeOfInode(ino);
  const uint64_t count = uint64_t{manifest_->ChildCount(dir)} + 2;

  const uint32_t first = manifest_->FirstChild(dir);
  uint32_t listed_first = UINT32_MAX, listed_end = 0;
  bool more = true;
  for (uint64_t i = offset; i < count; ++i) {
    if (i == 0) {
      more = emit(".", NodeAttr(dir), i + 1);
    } else if (i == 1) {
      more = emit("..", NodeAttr(manifest_->node(dir).parent), i + 1);
    } else {
      const uint32_t child = first + static_cast<uint32_t>(i - 2);
      more = emit(manifest_->name(child), NodeAttr(child), i + 1);
      if (more) {
        listed_first = std::min(listed_first, child);
        listed_end = child + 1;
      }
    }
    if (!more) break;
  }
  // The area is the root's last entry.
  if (more && ino == root_ino() && writes_ != nullptr && offset <= count) {
    const Attr area = writes_->GetAttr(writes_->root_ino()).value();
    emit(writes_->name(), area, count + 1);  // the root is never forgotten: no count
  }
  if (options_.open_observer != nullptr && listed_first < listed_end) {
    options_.open_observer->OnListed(listed_first, listed_end);
  }
  return Status::Ok();
}

Result<OpenReply> Vfs::Open(uint64_t ino, int flags) {
  Stats::Add(stats_->opens, 1);
  if (InArea(ino)) {
    CLAIRFS_RETURN_IF_ERROR(writes_->CheckOpen(ino, /*dir=*/false));
    OpenReply reply;
    reply.keep_cache = false;
    reply.decline = decline_open_.load(std::memory_order_relaxed);
    return reply;
  }
  if ((flags & O_ACCMODE) != O_RDONLY) return Status::IOError("read-only", EROFS);
  if (control_.Owns(ino)) {
    if (control_.IndexOf(ino) == ControlFiles::kDir) return Status::IOError("dir", EISDIR);
    if (!control_.Present(control_.IndexOf(ino))) return NoEntry(ino);
    OpenReply reply;
    reply.direct_io = true;
    reply.keep_cache = false;
    return reply;
  }
  if (!IsNode(ino)) return NoEntry(ino);
  if (manifest_->IsDirectory(NodeOfInode(ino))) {
    return Status::IOError("is a directory", EISDIR);
  }
  OpenReply reply;
  reply.decline = decline_open_.load(std::memory_order_relaxed);
  // A declined open is seen by whoever made the Vfs decline (an OpenWatcher).
  if (options_.open_observer != nullptr && !reply.decline) {
    options_.open_observer->OnOpen(NodeOfInode(ino));
  }
  return reply;
}

std::optional<Result<ReadData>> Vfs::ReadIfReady(uint64_t ino, uint64_t offset, size_t size) {
  if (InArea(ino)) return std::nullopt;  // a disk read: the pool's
  if (control_.Owns(ino) || !IsNode(ino) || manifest_->IsDirectory(NodeOfInode(ino))) {
    return Read(ino, offset, size);
  }
  auto data = reader_.ReadIfCached(NodeOfInode(ino), offset, size);
  if (!data) return std::nullopt;
  Stats::Add(stats_->reads, 1);
  CountAnswered(*data);
  return Result<ReadData>(std::move(*data));
}

Result<ReadData> Vfs::Read(uint64_t ino, uint64_t offset, size_t size) {
  if (InArea(ino)) {
    auto bytes = writes_->Read(ino, offset, size);
    if (!bytes.ok()) return bytes.status();
    ReadData out;
    if (!bytes->empty()) {
      auto block = std::make_shared<Block>(bytes->size());
      std::memcpy(block->data.get(), bytes->data(), bytes->size());
      out.slices.push_back({block, block->data.get(), bytes->size()});
      out.total = bytes->size();
    }
    return out;
  }
  if (control_.Owns(ino)) {
    const ControlFiles::Index i = control_.IndexOf(ino);
    if (i == ControlFiles::kDir) return Status::IOError("is a directory", EISDIR);
    if (!control_.Present(i)) return NoEntry(ino);
    int64_t mtime;
    BlockRef content = control_.Current(i, &mtime);
    ReadData out;
    if (offset < content->size) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(size, content->size - offset));
      out.slices.push_back({content, content->data.get() + offset, n});
      out.total = n;
    }
    return out;
  }
  if (!IsNode(ino)) return NoEntry(ino);
  const uint32_t node = NodeOfInode(ino);
  if (manifest_->IsDirectory(node)) return Status::IOError("is a directory", EISDIR);
  Stats::Add(stats_->reads, 1);
  const auto t0 = std::chrono::steady_clock::now();
  Result<ReadData> data = reader_.Read(node, offset, size);
  if (!data.ok()) return data;
  CountAnswered(*data);
  if (!data->from_ram_cache && data->total > 0 && options_.open_observer != nullptr) {
    const auto waited = std::chrono::steady_clock::now() - t0;
    options_.open_observer->OnReadWait(
        node, static_cast<uint64_t>(
                  std::chrono::duration_cast<std::chrono::nanoseconds>(waited).count()));
  }
  return data;
}

void Vfs::CountAnswered(const ReadData& data) {
  // A READ at or past the end of the file needs no source.
  if (data.total == 0) return;
  if (data.from_ram_cache) {
    Stats::Add(stats_->reads_from_ram, 1);
    Stats::Add(stats_->read_bytes_from_ram, data.total);
  } else {
    Stats::Add(stats_->reads_from_pack, 1);
    Stats::Add(stats_->read_bytes_from_pack, data.total);
  }
}

void Vfs::Forget(uint64_t ino, uint64_t count) {
  if (InArea(ino)) {
    writes_->Forget(ino, count);
    return;
  }
  // The kernel sends FORGET as it evicts the inode, so with its page cache.
  if (options_.open_observer != nullptr && IsNode(ino) && !control_.Owns(ino) &&
      !manifest_->IsDirectory(NodeOfInode(ino))) {
    options_.open_observer->OnForget(NodeOfInode(ino));
  }
}

namespace {
Status ReadOnly() { return Status::IOError("the dataset is read-only", EROFS); }
}  // namespace

Result<Attr> Vfs::SetAttr(uint64_t ino, const AttrChange& change) {
  if (InArea(ino)) return writes_->SetAttr(ino, change);
  return ReadOnly();
}

Result<Attr> Vfs::Mkdir(uint64_t parent, std::string_view name, uint32_t mode) {
  if (InArea(parent)) return writes_->Mkdir(parent, name, mode);
  return ReadOnly();
}

Result<Attr> Vfs::Create(uint64_t parent, std::string_view name, uint32_t mode) {
  if (InArea(parent)) return writes_->Create(parent, name, mode);
  return ReadOnly();
}

Status Vfs::Unlink(uint64_t parent, std::string_view name) {
  if (InArea(parent)) return writes_->Unlink(parent, name);
  return ReadOnly();
}

Status Vfs::Rmdir(uint64_t parent, std::string_view name) {
  if (InArea(parent)) return writes_->Rmdir(parent, name);
  return ReadOnly();
}

Status Vfs::Rename(uint64_t parent, std::string_view name, uint64_t new_parent,
                   std::string_view new_name, unsigned flags) {
  if (InArea(parent) && InArea(new_parent)) {
    return writes_->Rename(parent, name, new_parent, new_name, flags);
  }
  if (InArea(parent) || InArea(new_parent)) {
    return Status::IOError("between the dataset and the writable area", EXDEV);
  }
  return ReadOnly();
}

Result<size_t> Vfs::Write(uint64_t ino, uint64_t offset, const char* data, size_t size) {
  if (InArea(ino)) return writes_->Write(ino, offset, data, size);
  return ReadOnly();
}

Status Vfs::Fsync(uint64_t ino) {
  if (InArea(ino)) return writes_->Fsync(ino);
  return Status::Ok();  // nothing of the dataset is ever unwritten
}

Status Vfs::Unsupported(uint64_t ino, int area_err) const {
  if (InArea(ino)) return Status::IOError("not supported in the writable area", area_err);
  return ReadOnly();
}

FsStat Vfs::StatFs() const {
  if (writes_ != nullptr) {
    FsStat s = writes_->StatFs();
    s.files += manifest_->node_count();
    return s;
  }
  FsStat s;
  s.blocks = (manifest_->header().raw_bytes + s.block_size - 1) / s.block_size;
  s.files = manifest_->node_count();
  return s;
}

}  // namespace clairfs::fs
