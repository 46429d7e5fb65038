#include "fs/vfs/write_area.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <vector>

#include "base/log.hpp"

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

Status WriteArea::Load() {
  for (const std::string* dir : {&options_.local, &options_.persist}) {
    std::error_code ec;
    std::filesystem::create_directories(*dir, ec);
    if (ec) return Status::IOError("writes: cannot make " + *dir + ": " + ec.message(), EIO);
  }
  const auto open_dir = [](const std::string& path, Fd* out) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return Status::FromErrno(errno, "writes: open " + path);
    *out = Fd(fd);
    return Status::Ok();
  };
  CLAIRFS_RETURN_IF_ERROR(open_dir(options_.local, &local_));
  CLAIRFS_RETURN_IF_ERROR(open_dir(options_.persist, &persist_));
  auto lock = OpenBeneath(local_.get(), ".lock", O_CREAT | O_RDWR, 0600);
  if (!lock.ok()) return lock.status();
  lock_ = std::move(lock).value();
  if (::flock(lock_.get(), LOCK_EX | LOCK_NB) != 0) {
    return Status::IOError("writes: " + options_.local +
                               " is in use by another daemon (give each its own, e.g. with {rank})",
                           EBUSY);
  }
  // What the kernel could still read of unlinked files died with the last run.
  CLAIRFS_RETURN_IF_ERROR(RemoveTreeAt(local_.get(), "trash"));
  for (const char* sub : {"tree", "trash"}) {
    auto fd = MakeDirsBeneath(local_.get(), sub, 0700);
    if (!fd.ok()) return fd.status();
    (std::string(sub) == "tree" ? tree_ : trash_) = std::move(fd).value();
  }
  MutexLock l(&mu_);
  auto root = std::make_unique<Node>();
  root->ino = next_ino_++;
  root->mode = S_IFDIR | 0755;
  root->mtime_ns = NowNs();
  Node* r = root.get();
  nodes_.emplace(r->ino, std::move(root));
  {
    l.Unlock();
    Status st = ScanPersist(persist_.get(), r, "");
    if (st.ok()) st = ScanLocal(tree_.get(), r, "");
    l.Lock();
    CLAIRFS_RETURN_IF_ERROR(st);
  }
  if (!queue_.empty()) {
    Log(LogLevel::kInfo, "writes: " + std::to_string(recovered_files_.load()) + " file(s) in " +
                             options_.local + " not yet in " + options_.persist +
                             " (a run that stopped before its drain ended): drained first");
  }
  return Status::Ok();
}

Status WriteArea::ScanLocal(int dir_fd, Node* dir, const std::string& rel) {
  for (const std::string& name : ListDirAt(dir_fd)) {
    struct stat st;
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) continue;
    const std::string path = JoinRel(rel, name);
    Node* n;
    {
      MutexLock lock(&mu_);
      Node* had = Child(dir, name);
      if (had != nullptr && had->dir() != S_ISDIR(st.st_mode)) {
        // A file where persist has a directory or the other way round: the
        // local one is the newer.
        Queue(Step::kUnlink, path, 0);
        Detach(had);
        had->unlinked = true;
        MaybeFree(had);
        had = nullptr;
      }
      n = had;
      if (n == nullptr) {
        n = AddNode(dir, name, st.st_mode);
        n->mtime_ns = MtimeNs(st);
        if (S_ISDIR(st.st_mode)) Queue(Step::kMkdir, path, n->ino);
      }
      if (S_ISREG(st.st_mode)) {
        const bool same =
            !n->local && n->size == static_cast<uint64_t>(st.st_size) && n->mtime_ns == MtimeNs(st);
        n->local = true;
        if (!same) {
          Queue(Step::kPut, path, n->ino);
          recovered_files_++;
        }
      }
    }
    if (S_ISDIR(st.st_mode)) {
      auto sub = OpenBeneath(dir_fd, name, O_RDONLY | O_DIRECTORY);
      if (!sub.ok()) return sub.status();
      CLAIRFS_RETURN_IF_ERROR(ScanLocal(sub->get(), n, path));
    }
  }
  return Status::Ok();
}

WriteArea::Node* WriteArea::Find(uint64_t ino) {
  auto it = nodes_.find(ino);
  return it == nodes_.end() ? nullptr : it->second.get();
}

Result<WriteArea::Node*> WriteArea::Dir(uint64_t ino) {
  Node* n = Find(ino);
  if (n == nullptr || n->unlinked) return Status::NotFound("inode " + std::to_string(ino));
  if (!n->dir()) return Status::IOError("not a directory", ENOTDIR);
  return n;
}

WriteArea::Node* WriteArea::Child(Node* dir, std::string_view name) {
  auto it = dir->children.find(name);
  return it == dir->children.end() ? nullptr : it->second;
}

WriteArea::Node* WriteArea::AddNode(Node* parent, std::string_view name, uint32_t mode) {
  auto node = std::make_unique<Node>();
  Node* n = node.get();
  n->ino = next_ino_++;
  n->mode = mode;
  n->mtime_ns = NowNs();
  nodes_.emplace(n->ino, std::move(node));
  Attach(parent, name, n);
  return n;
}

void WriteArea::Attach(Node* parent, std::string_view name, Node* n) {
  n->parent = parent;
  n->name = std::string(name);
  parent->children.emplace(n->name, n);
  parent->by_ino.emplace(n->ino, n);
  if (n->dir()) parent->subdirs++;
}

void WriteArea::Detach(Node* n) {
  Node* p = n->parent;
  if (p == nullptr) return;
  p->children.erase(n->name);
  p->by_ino.erase(n->ino);
  if (n->dir()) p->subdirs--;
  n->parent = nullptr;
}

std::string WriteArea::PathOf(const Node* n) const {
  std::vector<const std::string*> parts;
  for (; n != nullptr && n->parent != nullptr; n = n->parent) parts.push_back(&n->name);
  std::string out;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (!out.empty()) out += '/';
    out += **it;
  }
  return out;
}

std::pair<int, std::string> WriteArea::LocalOf(const Node* n) const {
  if (n->unlinked) return {trash_.get(), std::to_string(n->ino)};
  return {tree_.get(), PathOf(n)};
}

Attr WriteArea::AttrOf(const Node* n) {
  Attr a;
  a.ino = n->ino;
  a.mode = n->mode;
  a.uid = options_.uid;
  a.gid = options_.gid;
  a.cacheable = false;
  a.mtime_ns = n->mtime_ns;
  if (n->dir()) {
    a.nlink = 2 + n->subdirs;
    a.size = 4096;
    return a;
  }
  a.nlink = n->unlinked ? 0 : 1;
  a.size = n->size;
  if (n->local) {
    auto [fd, rel] = LocalOf(n);
    struct stat st;
    if (::fstatat(fd, rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      a.size = static_cast<uint64_t>(st.st_size);
      a.mtime_ns = MtimeNs(st);
    }
  }
  return a;
}

void WriteArea::Touch(Node* dir) {
  if (dir != nullptr) dir->mtime_ns = NowNs();
}

void WriteArea::MarkWritten(Node* n) {
  if (n->unlinked) return;
  n->written_ns = NowNs();
  written_.insert(n->ino);
}

uint64_t WriteArea::Queue(Step::Kind kind, std::string path, uint64_t ino, std::string to) {
  Step s;
  s.kind = kind;
  s.path = std::move(path);
  s.to = std::move(to);
  s.ino = ino;
  s.seq = next_seq_++;
  s.queued_ns = NowNs();
  if (peers_ != nullptr) Announce(s);
  queue_.push_back(std::move(s));
  changed_.NotifyAll();
  return next_seq_ - 1;
}

void WriteArea::QueueSettled(bool all) {
  const int64_t now = NowNs();
  const int64_t settle = std::chrono::nanoseconds(options_.settle).count();
  for (auto it = written_.begin(); it != written_.end();) {
    Node* n = Find(*it);
    if (n == nullptr || n->unlinked) {
      it = written_.erase(it);
    } else if (all || now - n->written_ns >= settle) {
      Queue(Step::kPut, PathOf(n), n->ino);
      it = written_.erase(it);
    } else {
      ++it;
    }
  }
}

Result<Fd> WriteArea::LocalDir(Node* dir) {
  return MakeDirsBeneath(tree_.get(), PathOf(dir), 0700);
}

Status WriteArea::Remove(Node* n) {
  const std::string path = PathOf(n);
  if (n->dir()) {
    if (::unlinkat(tree_.get(), path.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
      // Only the tree's own files can be there, and the tree says it is empty.
      auto [dir, leaf] = SplitLast(path);
      auto parent = OpenBeneath(tree_.get(), dir, O_RDONLY | O_DIRECTORY);
      if (parent.ok()) CLAIRFS_RETURN_IF_ERROR(RemoveTreeAt(parent->get(), std::string(leaf)));
    }
  } else if (n->local) {
    const std::string to = std::to_string(n->ino);
    if (::renameat(tree_.get(), path.c_str(), trash_.get(), to.c_str()) != 0 && errno != ENOENT) {
      return Status::FromErrno(errno, "remove " + path);
    }
  }
  written_.erase(n->ino);
  Unserve(n->ino);
  Touch(n->parent);
  Detach(n);
  n->unlinked = true;
  MaybeFree(n);
  return Status::Ok();
}

void WriteArea::MaybeFree(Node* n) {
  if (!n->unlinked || n->lookups > 0) return;
  if (!n->dir() && n->local) ::unlinkat(trash_.get(), std::to_string(n->ino).c_str(), 0);
  written_.erase(n->ino);
  Unserve(n->ino);
  nodes_.erase(n->ino);
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
