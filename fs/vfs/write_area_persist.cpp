// WriteArea's view of `persist` (fs/vfs/write_area.hpp): the scan at start,
// what other nodes drained there since (found at lookups and listings), and
// copying a file that is only there into `local` before it is changed.
#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <string>

#include "base/log.hpp"
#include "fs/vfs/write_area.hpp"

namespace clairfs::fs {

// Scanning runs before anything else can reach the tree; it takes mu_ for
// each change all the same.
Status WriteArea::ScanPersist(int dir_fd, Node* dir, const std::string& rel) {
  for (const std::string& name : ListDirAt(dir_fd)) {
    if (std::string_view(name).substr(0, kDrainPrefix.size()) == kDrainPrefix) continue;
    struct stat st;
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
      Log(LogLevel::kWarn, "writes: " + JoinRel(rel, name) + " in " + options_.persist +
                               " is neither a file nor a directory: not shown");
      continue;
    }
    Node* n;
    {
      MutexLock lock(&mu_);
      n = AddFromPersist(dir, name, st);
    }
    if (S_ISDIR(st.st_mode)) {
      auto sub = OpenBeneath(dir_fd, name, O_RDONLY | O_DIRECTORY);
      if (!sub.ok()) return sub.status();
      CLAIRFS_RETURN_IF_ERROR(ScanPersist(sub->get(), n, JoinRel(rel, name)));
    }
  }
  return Status::Ok();
}

std::string WriteArea::PersistOf(const Node* n) const {
  return n->persist_path.empty() ? PathOf(n) : n->persist_path;
}

Status WriteArea::CopyUp(Node* n) {
  if (n->dir()) {
    auto made = LocalDir(n);
    if (!made.ok()) return made.status();
    for (auto& [name, child] : n->children) CLAIRFS_RETURN_IF_ERROR(CopyUp(child));
    return Status::Ok();
  }
  if (n->local || n->direct) return Status::Ok();  // direct: it stays in persist
  if (n->home >= 0) {
    // A peer's file becomes this node's own: copied from its node (else from
    // persist, if drained there), and drained by this node from now on.
    Status copied = CopyUpFromHome(n);
    if (!copied.ok()) {
      peer_fallbacks_++;
      copied = CopyUpFromPersist(n);
    }
    if (copied.ok()) MarkWritten(n);
    return copied;
  }
  if (n->unlinked) return Status::IOError("a removed file of an earlier run", ESTALE);
  return CopyUpFromPersist(n);
}

Status WriteArea::CopyUpFromPersist(Node* n) {
  const std::string path = PathOf(n);
  auto in = OpenBeneath(persist_.get(), path, O_RDONLY);
  if (!in.ok()) return in.status();
  auto dir = LocalDir(n->parent);
  if (!dir.ok()) return dir.status();
  const std::string tmp = "up." + std::to_string(n->ino);
  auto out = OpenBeneath(trash_.get(), tmp, O_CREAT | O_TRUNC | O_WRONLY, 0600);
  if (!out.ok()) return out.status();
  struct stat st;
  if (::fstat(in->get(), &st) != 0) return Status::FromErrno(errno, "stat " + path);
  Status copied = CopyFileBytes(in->get(), out->get(), static_cast<uint64_t>(st.st_size));
  // The mtime equal to persist's: not drained again.
  return InstallCopy(n, dir->get(), tmp, out->get(), copied, {st.st_mtim, st.st_mtim},
                     static_cast<uint64_t>(st.st_size));
}

Status WriteArea::InstallCopy(Node* n, int dir, const std::string& tmp, int out, Status copied,
                              const std::array<timespec, 2>& times, uint64_t bytes) {
  if (copied.ok() &&
      (::fchmod(out, (n->mode & 07777) | 0600) != 0 || ::futimens(out, times.data()) != 0 ||
       ::renameat(trash_.get(), tmp.c_str(), dir, n->name.c_str()) != 0)) {
    copied = Status::FromErrno(errno, "copy " + PathOf(n));
  }
  if (!copied.ok()) {
    ::unlinkat(trash_.get(), tmp.c_str(), 0);
    return copied;
  }
  n->local = true;
  n->home = -1;
  copied_up_bytes_ += bytes;
  return Status::Ok();
}

WriteArea::Node* WriteArea::AddFromPersist(Node* dir, std::string_view name,
                                           const struct stat& st) {
  Node* n = AddNode(dir, name, st.st_mode);
  n->local = false;
  n->size = static_cast<uint64_t>(st.st_size);
  n->mtime_ns = MtimeNs(st);
  if (!n->dir()) known_[PathOf(n)] = Stamp{n->size, n->mtime_ns};
  return n;
}

bool WriteArea::RemovalPending(const std::string& path) const {
  for (const Step& s : queue_) {
    if (s.kind != Step::kUnlink && s.kind != Step::kRmdir && s.kind != Step::kRename) continue;
    if (path == s.path ||
        (path.size() > s.path.size() && path.compare(0, s.path.size(), s.path) == 0 &&
         path[s.path.size()] == '/')) {
      return true;
    }
  }
  return false;
}

WriteArea::Node* WriteArea::Discover(Node* dir, std::string_view name) {
  if (CheckName(name).ok() == false) return nullptr;
  const std::string path = JoinRel(PathOf(dir), name);
  if (RemovalPending(path)) return nullptr;  // this node removed it; the drain has not yet
  auto at = OpenBeneath(persist_.get(), PathOf(dir), O_RDONLY | O_DIRECTORY);
  if (!at.ok()) return nullptr;
  const std::string leaf(name);
  struct stat st;
  if (::fstatat(at->get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
      (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))) {
    return nullptr;
  }
  discovered_++;
  return AddFromPersist(dir, name, st);
}

void WriteArea::DiscoverAll(Node* dir) {
  auto at = OpenBeneath(persist_.get(), PathOf(dir), O_RDONLY | O_DIRECTORY);
  if (!at.ok()) return;
  for (const std::string& name : ListDirAt(at->get())) {
    if (Child(dir, name) == nullptr) Discover(dir, name);
  }
}

bool WriteArea::Refresh(Node* n) {
  // A peer's file is as its node last published it.
  if (n->local || n->dir() || n->unlinked || n->home >= 0) return true;
  const std::string path = PersistOf(n);
  auto [dir, leaf] = SplitLast(path);
  auto at = OpenBeneath(persist_.get(), dir, O_RDONLY | O_DIRECTORY);
  struct stat st;
  const std::string name(leaf);
  if (at.ok() && ::fstatat(at->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISREG(st.st_mode)) {
    n->size = static_cast<uint64_t>(st.st_size);
    n->mtime_ns = MtimeNs(st);
    known_[path] = Stamp{n->size, n->mtime_ns};
    return true;
  }
  // Removed or replaced by a directory on another node: gone here too.
  known_.erase(path);
  Touch(n->parent);
  Detach(n);
  n->unlinked = true;
  MaybeFree(n);
  return false;
}

}  // namespace clairfs::fs
