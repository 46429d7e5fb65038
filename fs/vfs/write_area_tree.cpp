// The write area's file table: loading it from `local` (and what `persist`
// already holds) at start, finding, linking and unlinking its nodes, their
// paths and attributes, and the steps queued for the drain. The namespace
// operations built on it are in write_area.cpp.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <vector>

#include "base/log.hpp"
#include "fs/vfs/write_area.hpp"

namespace clairfs::fs {

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

}  // namespace clairfs::fs
