#include "fs/vfs/write_area.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace clairfs::fs {

int64_t WriteArea::NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status WriteArea::CheckName(std::string_view name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string_view::npos) {
    return Status::IOError("invalid name", EINVAL);
  }
  if (name.size() > 255) return Status::IOError("name too long", ENAMETOOLONG);
  if (name.substr(0, kDrainPrefix.size()) == kDrainPrefix) {
    return Status::IOError(
        std::string(name) + ": names starting " + std::string(kDrainPrefix) + " are the drain's",
        EPERM);
  }
  return Status::Ok();
}

WriteArea::WriteArea(WriteAreaOptions options, uint64_t first_ino)
    : options_(std::move(options)), first_ino_(first_ino), next_ino_(first_ino) {}

WriteArea::~WriteArea() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    abandon_ = true;
    changed_.NotifyAll();
  }
  if (drain_.joinable()) drain_.join();
  {
    MutexLock lock(&inbox_mu_);
    inbox_stop_ = true;
    inbox_cv_.NotifyAll();
  }
  if (notices_.joinable()) notices_.join();
}

Result<std::unique_ptr<WriteArea>> WriteArea::Open(WriteAreaOptions options, uint64_t first_ino) {
  std::unique_ptr<WriteArea> area(new WriteArea(std::move(options), first_ino));
  CLAIRFS_RETURN_IF_ERROR(area->Load());
  return area;
}

Attr WriteArea::RootEntry() {
  MutexLock lock(&mu_);
  Node* root = Find(first_ino_);
  root->lookups++;
  return AttrOf(root);
}

Result<Attr> WriteArea::Lookup(uint64_t parent, std::string_view name) {
  MutexLock lock(&mu_);
  auto dir = Dir(parent);
  if (!dir.ok()) return dir.status();
  Node* n = Child(*dir, name);
  // What another node drained since this one started is found in persist.
  if (n != nullptr && !Refresh(n)) n = nullptr;
  if (n == nullptr) n = Discover(*dir, name);
  if (n == nullptr) return Status::NotFound(std::string(name));
  n->lookups++;
  return AttrOf(n);
}

void WriteArea::Forget(uint64_t ino, uint64_t count) {
  MutexLock lock(&mu_);
  Node* n = Find(ino);
  if (n == nullptr || ino == first_ino_) return;
  n->lookups -= std::min(n->lookups, count);
  MaybeFree(n);
}

Result<Attr> WriteArea::GetAttr(uint64_t ino) {
  MutexLock lock(&mu_);
  Node* n = Find(ino);
  if (n == nullptr) return Status::NotFound("inode " + std::to_string(ino));
  Refresh(n);  // removed elsewhere: reported with nlink 0
  return AttrOf(n);
}

Result<Attr> WriteArea::SetAttr(uint64_t ino, const AttrChange& c) {
  MutexLock lock(&mu_);
  Node* n = Find(ino);
  if (n == nullptr) return Status::NotFound("inode " + std::to_string(ino));
  if ((c.uid && c.new_uid != options_.uid) || (c.gid && c.new_gid != options_.gid)) {
    return Status::IOError("the area's files belong to the mounting user", EPERM);
  }
  if (c.size && n->dir()) return Status::IOError("is a directory", EISDIR);
  if (n->direct) {
    // Changed where its bytes are: in persist.
    auto f = OpenBeneath(persist_.get(), PersistOf(n), O_WRONLY);
    if (!f.ok()) return f.status();
    if (c.size && ::ftruncate(f->get(), static_cast<off_t>(c.new_size)) != 0) {
      return Status::FromErrno(errno, "truncate");
    }
    if (c.mode) {
      n->mode = (n->mode & S_IFMT) | (c.new_mode & 07777);
      ::fchmod(f->get(), c.new_mode & 07777);
    }
    if (c.mtime) {
      const auto times = MtimeTimes(c.new_mtime_ns);
      if (::futimens(f->get(), times.data()) != 0) return Status::FromErrno(errno, "utimens");
    }
    Refresh(n);
    return AttrOf(n);
  }
  // A peer's file changed here becomes this node's own (CopyUp).
  if (c.size || (!n->dir() && (c.mtime || n->home >= 0))) CLAIRFS_RETURN_IF_ERROR(CopyUp(n));
  const bool has_local = n->local || n->dir();
  Fd fd;
  if (has_local && !(n->dir() && !c.mode && !c.mtime)) {
    auto [base, rel] = LocalOf(n);
    if (n->dir()) CLAIRFS_RETURN_IF_ERROR(LocalDir(n).status());
    auto f = OpenBeneath(base, rel, n->dir() ? (O_RDONLY | O_DIRECTORY) : O_WRONLY);
    if (!f.ok()) return f.status();
    fd = std::move(f).value();
  }
  if (c.size && ::ftruncate(fd.get(), static_cast<off_t>(c.new_size)) != 0) {
    return Status::FromErrno(errno, "truncate");
  }
  if (c.mode) {
    n->mode = (n->mode & S_IFMT) | (c.new_mode & 07777);
    if (fd.valid()) ::fchmod(fd.get(), (c.new_mode & 07777) | (n->dir() ? 0700 : 0600));
  }
  if (c.mtime) {
    n->mtime_ns = c.new_mtime_ns;
    const auto times = MtimeTimes(c.new_mtime_ns);
    if (fd.valid() && ::futimens(fd.get(), times.data()) != 0)
      return Status::FromErrno(errno, "utimens");
  }
  if (c.size) {
    MarkWritten(n);
  } else if ((c.mode || c.mtime) && !n->unlinked && written_.count(n->ino) == 0) {
    Queue(Step::kMeta, PathOf(n), n->ino);
  }
  return AttrOf(n);
}

Result<Fd> WriteArea::NewEntryDir(uint64_t parent, std::string_view name, Node** dir) {
  CLAIRFS_RETURN_IF_ERROR(CheckName(name));
  auto d = Dir(parent);
  if (!d.ok()) return d.status();
  if (Child(*d, name) != nullptr) return Status::IOError("exists", EEXIST);
  *dir = *d;
  return LocalDir(*d);
}

Result<Attr> WriteArea::Mkdir(uint64_t parent, std::string_view name, uint32_t mode) {
  MutexLock lock(&mu_);
  Node* dir = nullptr;
  auto at = NewEntryDir(parent, name, &dir);
  if (!at.ok()) return at.status();
  const std::string leaf(name);
  if (::mkdirat(at->get(), leaf.c_str(), (mode & 07777) | 0700) != 0 && errno != EEXIST) {
    return Status::FromErrno(errno, "mkdir " + leaf);
  }
  Node* n = AddNode(dir, name, S_IFDIR | (mode & 07777));
  Touch(dir);
  n->lookups++;
  Queue(Step::kMkdir, PathOf(n), n->ino);
  return AttrOf(n);
}

Result<Attr> WriteArea::Create(uint64_t parent, std::string_view name, uint32_t mode) {
  MutexLock lock(&mu_);
  Node* dir = nullptr;
  auto at = NewEntryDir(parent, name, &dir);
  if (!at.ok()) return at.status();
  auto f = OpenBeneath(at->get(), name, O_CREAT | O_TRUNC | O_WRONLY, (mode & 07777) | 0600);
  if (!f.ok()) return f.status();
  Node* n = AddNode(dir, name, S_IFREG | (mode & 07777));
  Touch(dir);
  MarkWritten(n);  // even empty, it reaches persist
  n->lookups++;
  return AttrOf(n);
}

Status WriteArea::Unlink(uint64_t parent, std::string_view name) {
  MutexLock lock(&mu_);
  auto dir = Dir(parent);
  if (!dir.ok()) return dir.status();
  Node* n = Child(*dir, name);
  if (n == nullptr) return Status::NotFound(std::string(name));
  if (n->dir()) return Status::IOError("is a directory", EISDIR);
  const std::string path = PathOf(n);
  CLAIRFS_RETURN_IF_ERROR(Remove(n));
  Queue(Step::kUnlink, path, 0);
  return Status::Ok();
}

Status WriteArea::Rmdir(uint64_t parent, std::string_view name) {
  MutexLock lock(&mu_);
  auto dir = Dir(parent);
  if (!dir.ok()) return dir.status();
  Node* n = Child(*dir, name);
  if (n == nullptr) return Status::NotFound(std::string(name));
  if (!n->dir()) return Status::IOError("not a directory", ENOTDIR);
  DiscoverAll(n);  // what another node drained into it counts: not removed with it
  if (!n->children.empty()) return Status::IOError("not empty", ENOTEMPTY);
  const std::string path = PathOf(n);
  CLAIRFS_RETURN_IF_ERROR(Remove(n));
  Queue(Step::kRmdir, path, 0);
  return Status::Ok();
}

Status WriteArea::Rename(uint64_t parent, std::string_view name, uint64_t new_parent,
                         std::string_view new_name, unsigned flags) {
  constexpr unsigned kNoReplace = 1;  // RENAME_NOREPLACE
  if ((flags & ~kNoReplace) != 0) return Status::IOError("rename flags", EINVAL);
  CLAIRFS_RETURN_IF_ERROR(CheckName(new_name));
  MutexLock lock(&mu_);
  auto from_dir = Dir(parent);
  if (!from_dir.ok()) return from_dir.status();
  auto to_dir = Dir(new_parent);
  if (!to_dir.ok()) return to_dir.status();
  Node* n = Child(*from_dir, name);
  if (n == nullptr) return Status::NotFound(std::string(name));
  Node* target = Child(*to_dir, new_name);
  // In the order Linux checks them (do_renameat2, then vfs_rename).
  if (target != nullptr && (flags & kNoReplace)) return Status::IOError("exists", EEXIST);
  const auto is_ancestor = [](const Node* a, const Node* of) {
    for (const Node* up = of; up != nullptr; up = up->parent) {
      if (up == a) return true;
    }
    return false;
  };
  if (n->dir() && is_ancestor(n, *to_dir)) return Status::IOError("into itself", EINVAL);
  if (target != nullptr && target->dir() && is_ancestor(target, *from_dir)) {
    return Status::IOError("onto its own ancestor", ENOTEMPTY);
  }
  if (target == n) return Status::Ok();
  if (target != nullptr) {
    if (n->dir() && !target->dir()) return Status::IOError("not a directory", ENOTDIR);
    if (!n->dir() && target->dir()) return Status::IOError("is a directory", EISDIR);
    if (target->dir() && !target->children.empty()) return Status::IOError("not empty", ENOTEMPTY);
  }
  // A persist-only file keeps its bytes where they are until the drain
  // renames them (persist_path); under a directory, persist-only files are
  // copied to `local` first, so that reads meanwhile find them.
  if (n->dir() || n->home >= 0) {
    CLAIRFS_RETURN_IF_ERROR(CopyUp(n));
  } else if (!n->local) {
    n->persist_path = PersistOf(n);
  }
  const bool moves_local = n->local || n->dir();
  Fd src, dst;
  if (moves_local) {
    auto from_fd = LocalDir(*from_dir);
    if (!from_fd.ok()) return from_fd.status();
    auto to_fd = LocalDir(*to_dir);
    if (!to_fd.ok()) return to_fd.status();
    src = std::move(from_fd).value();
    dst = std::move(to_fd).value();
  }
  const std::string from = PathOf(n);
  const std::string leaf(name), new_leaf(new_name);
  if (target != nullptr) {
    // Replaced in one step in persist too: the rename there replaces it.
    CLAIRFS_RETURN_IF_ERROR(Remove(target));
  }
  if (moves_local && ::renameat(src.get(), leaf.c_str(), dst.get(), new_leaf.c_str()) != 0) {
    return Status::FromErrno(errno, "rename " + from);
  }
  Touch(*from_dir);
  Touch(*to_dir);
  Detach(n);
  Attach(*to_dir, new_name, n);
  Queue(Step::kRename, from, n->ino, PathOf(n));
  return Status::Ok();
}

Status WriteArea::CheckOpen(uint64_t ino, bool dir) {
  MutexLock lock(&mu_);
  Node* n = Find(ino);
  if (n == nullptr) return Status::NotFound("inode " + std::to_string(ino));
  if (dir && !n->dir()) return Status::IOError("not a directory", ENOTDIR);
  if (!dir && n->dir()) return Status::IOError("is a directory", EISDIR);
  return Status::Ok();
}

Status WriteArea::Fsync(uint64_t ino) {
  uint64_t seq;
  {
    MutexLock lock(&mu_);
    Node* n = Find(ino);
    if (n == nullptr) return Status::NotFound("inode " + std::to_string(ino));
    if (n->dir()) {
      QueueSettled(/*all=*/true);
    } else if (written_.erase(ino) > 0 && !n->unlinked) {
      Queue(Step::kPut, PathOf(n), ino);
    }
    seq = next_seq_ - 1;
  }
  CLAIRFS_RETURN_IF_ERROR(WaitDrained(seq));
  std::string direct;
  {
    MutexLock lock(&mu_);
    Node* n = Find(ino);
    if (n != nullptr && n->direct && !n->unlinked) direct = PersistOf(n);
  }
  if (direct.empty()) return Status::Ok();
  auto f = OpenBeneath(persist_.get(), direct, O_RDONLY);
  if (!f.ok()) return f.status();
  if (::fsync(f->get()) != 0) return Status::FromErrno(errno, "fsync " + direct);
  return Status::Ok();
}

Status WriteArea::WaitDrained(uint64_t seq) {
  MutexLock lock(&mu_);
  while (replayed_seq_ < seq) {
    if (!failing_.ok()) {
      return Status::IOError("writes: not yet in " + options_.persist + ": " + failing_.message(),
                             failing_.err() != 0 ? failing_.err() : EIO);
    }
    if (!draining_ || abandon_) {
      return Status::IOError("writes: the drain is not running", EIO);
    }
    changed_.Wait(&lock);
  }
  return Status::Ok();
}

Status WriteArea::ReadDir(uint64_t ino, uint64_t offset, bool plus, const DirEmit& emit) {
  MutexLock lock(&mu_);
  auto dir = Dir(ino);
  if (!dir.ok()) return dir.status();
  Node* d = *dir;
  if (offset == 0) {
    DiscoverAll(d);  // entries other nodes drained since this one started
    if (!emit(".", AttrOf(d), 1)) return Status::Ok();
    offset = 1;
  }
  if (offset == 1) {
    Attr up;
    if (d->parent != nullptr) {
      up = AttrOf(d->parent);
    } else {
      up.ino = 1;  // the mount's root
      up.mode = S_IFDIR | 0755;
    }
    if (!emit("..", up, 2)) return Status::Ok();
    offset = 2;
  }
  for (auto it = d->by_ino.lower_bound(offset); it != d->by_ino.end(); ++it) {
    Node* child = it->second;
    if (!emit(child->name, AttrOf(child), child->ino + 1)) break;
    if (plus) child->lookups++;
  }
  return Status::Ok();
}

FsStat WriteArea::StatFs() const {
  FsStat f;
  f.read_only = false;
  struct statvfs sv;
  if (::fstatvfs(local_.get(), &sv) == 0) {
    f.block_size = sv.f_frsize;
    f.blocks = sv.f_blocks;
    f.blocks_free = sv.f_bfree;
    f.blocks_available = sv.f_bavail;
    f.files = sv.f_files;
    f.files_free = sv.f_ffree;
  }
  return f;
}

size_t WriteArea::pending() const {
  MutexLock lock(&mu_);
  return queue_.size() + written_.size();
}

void WriteArea::WriteStats(JsonWriter& w) {
  MutexLock lock(&mu_);
  int64_t oldest = 0;
  if (!queue_.empty()) oldest = queue_.front().queued_ns;
  for (uint64_t ino : written_) {
    if (Node* n = Find(ino); n != nullptr && (oldest == 0 || n->written_ns < oldest)) {
      oldest = n->written_ns;
    }
  }
  const double lag = oldest == 0 ? 0.0 : static_cast<double>(NowNs() - oldest) / 1e9;
  w.String("dir", options_.name)
      .String("local", options_.local)
      .String("persist", options_.persist)
      .Integer("bytes_written", bytes_written_)
      .Integer("files_drained", files_drained_)
      .Integer("bytes_drained", bytes_drained_)
      .Integer("steps_replayed", steps_replayed_)
      .Integer("steps_pending", queue_.size())
      .Integer("files_unsettled", written_.size())
      .Number("drain_lag_seconds", lag)
      .Integer("drain_failures", drain_failures_)
      .String("failing", failing_.ok() ? "" : failing_.message())
      .Integer("recovered_files", recovered_files_)
      .Integer("found_in_persist", discovered_)
      .Integer("conflicts", conflicts_)
      .Integer("direct_files", direct_files_)
      .Integer("copied_up_bytes", copied_up_bytes_)
      .Integer("notices_sent", notices_sent_)
      .Integer("notices_applied", notices_applied_)
      .Integer("notices_rejected", notices_rejected_)
      .Integer("peer_reads", peer_reads_)
      .Integer("peer_read_bytes", peer_read_bytes_)
      .Integer("peer_fallbacks", peer_fallbacks_)
      .Integer("served_reads", served_reads_)
      .Integer("served_bytes", served_bytes_)
      .Integer("peer_conflicts", peer_conflicts_);
}

}  // namespace clairfs::fs
