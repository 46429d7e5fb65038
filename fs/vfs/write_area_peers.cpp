// WriteArea across nodes (fs/vfs/write_area.hpp): each change this node
// queues for the drain is published to the other daemons as a notice, and
// their notices show in this area. A peer's file is read from its node (the
// bytes it has now: a file is published once it settles or is fsynced, and
// again at each later settle), or from persist when that node cannot answer.
//
// Which change wins, on every node alike:
// - A node's own file (written or copied here) is never replaced by a peer's
//   notice: each node reads its own copy (a conflict, counted).
// - Between peers' copies of one path, the one with the later mtime wins
//   (ties: the higher rank), whatever order the notices arrive in; a later
//   notice of the same node always replaces its earlier one.
// - A peer's removal or rename applies to files that are not this node's own,
//   and to directories with nothing of this node's own below them.
// Notices are in order per sender and at most once; a notice lost with a dead
// peer leaves its files to persist (found there as any other node's).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/log.hpp"
#include "fs/vfs/write_area.hpp"

namespace clairfs::fs {
namespace {

enum NoticeOp : uint8_t { kFileNotice = 1, kDirNotice = 2, kRemoveNotice = 3, kRenameNotice = 4 };

// A notice: its op byte, then fixed-size fields and length-prefixed paths.
class NoticeWriter {
 public:
  explicit NoticeWriter(NoticeOp op) { out_.push_back(static_cast<char>(op)); }
  template <typename T>
  NoticeWriter& Put(T v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  NoticeWriter& Path(std::string_view p) {
    Put(static_cast<uint32_t>(p.size()));
    out_.append(p);
    return *this;
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class NoticeReader {
 public:
  explicit NoticeReader(std::string_view in) : in_(in) {}
  template <typename T>
  bool Get(T* v) {
    if (in_.size() < sizeof *v) return false;
    std::memcpy(v, in_.data(), sizeof *v);
    in_.remove_prefix(sizeof *v);
    return true;
  }
  bool Path(std::string_view* p) {
    uint32_t n = 0;
    if (!Get(&n) || n == 0 || n > in_.size() || n > 4096) return false;
    *p = in_.substr(0, n);
    in_.remove_prefix(n);
    return true;
  }
  bool done() const { return in_.empty(); }

 private:
  std::string_view in_;
};

// Every component of an area-relative path is a name the area allows.
template <typename CheckFn>
bool ValidPath(std::string_view path, CheckFn check) {
  while (!path.empty()) {
    const size_t slash = path.find('/');
    if (!check(path.substr(0, slash))) return false;
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return true;
}

}  // namespace

void WriteArea::Connect(WriteAreaPeers* peers, int rank) {
  MutexLock lock(&mu_);
  peers_ = peers;
  rank_ = rank;
}

void WriteArea::Announce(const Step& s) {
  switch (s.kind) {
    case Step::kPut:
    case Step::kMeta:
    case Step::kMkdir: {
      Node* n = Find(s.ino);
      if (n == nullptr || n->unlinked) return;
      if (!n->dir()) {
        AnnounceFile(n);
        return;
      }
      peers_->Publish(NoticeWriter(kDirNotice).Put<uint32_t>(n->mode & 07777).Path(s.path).Take());
      break;
    }
    case Step::kUnlink:
    case Step::kRmdir:
      peers_->Publish(NoticeWriter(kRemoveNotice).Path(s.path).Take());
      break;
    case Step::kRename:
      peers_->Publish(NoticeWriter(kRenameNotice).Path(s.path).Path(s.to).Take());
      break;
  }
  notices_sent_++;
}

void WriteArea::AnnounceFile(Node* n) {
  if (peers_ == nullptr || n->unlinked || n->dir()) return;
  if (n->home >= 0) return;  // a peer's file: its node announces it
  const Attr a = AttrOf(n);
  int home = -1;  // its bytes are in persist
  if (n->local) {
    auto [base, rel] = LocalOf(n);
    auto fd = OpenBeneath(base, rel, O_RDONLY);
    if (fd.ok()) {
      home = rank_;
      MutexLock lock(&serve_mu_);
      served_[n->ino] = std::make_shared<Fd>(std::move(fd).value());
      if (served_.size() > kMaxServed) served_.erase(served_.begin());
    }
  } else {
    Unserve(n->ino);
  }
  peers_->Publish(NoticeWriter(kFileNotice)
                      .Put<uint64_t>(n->ino)
                      .Put<uint64_t>(a.size)
                      .Put<int64_t>(a.mtime_ns)
                      .Put<uint32_t>(n->mode & 07777)
                      .Put<int32_t>(home)
                      .Path(PathOf(n))
                      .Take());
  notices_sent_++;
}

void WriteArea::Unserve(uint64_t ino) {
  MutexLock lock(&serve_mu_);
  served_.erase(ino);
}

Result<std::string> WriteArea::ServePeer(uint64_t ino, uint64_t offset, size_t size) {
  std::shared_ptr<Fd> fd;
  {
    MutexLock lock(&serve_mu_);
    auto it = served_.find(ino);
    if (it == served_.end()) return Status::IOError("writes: not a file of this node", ESTALE);
    fd = it->second;
  }
  auto out = ReadAt(fd->get(), offset, size);
  if (!out.ok())
    return Status::IOError("writes: read for a peer: " + out.status().message(),
                           out.status().err());
  served_reads_++;
  served_bytes_ += out->size();
  return out;
}

void WriteArea::QueueNotice(int peer, std::string_view notice) {
  MutexLock lock(&inbox_mu_);
  inbox_.emplace_back(peer, std::string(notice));
  inbox_cv_.NotifyOne();
}

void WriteArea::NoticeLoop() {
  // Also the settle timer: the drain thread looks for settled files only
  // between two copies, so a file that settles while it copies another
  // (seconds for a large one) would be published that much later.
  const auto tick = SettleTick();
  for (;;) {
    std::deque<std::pair<int, std::string>> batch;
    {
      MutexLock lock(&inbox_mu_);
      if (inbox_.empty() && !inbox_stop_) {
        inbox_cv_.WaitUntil(&lock, std::chrono::steady_clock::now() + tick);
      }
      if (inbox_stop_ && inbox_.empty()) return;
      batch.swap(inbox_);
    }
    for (const auto& [peer, notice] : batch) ApplyNotice(peer, notice);
    MutexLock lock(&mu_);
    if (!stopping_) QueueSettled(/*all=*/false);  // once stopping, the drain queues them all
  }
}

WriteArea::Node* WriteArea::Resolve(std::string_view path) {
  Node* n = Find(first_ino_);
  while (n != nullptr && !path.empty()) {
    const size_t slash = path.find('/');
    if (!n->dir()) return nullptr;
    n = Child(n, path.substr(0, slash));
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
  }
  return n;
}

WriteArea::Node* WriteArea::MakePeerDirs(std::string_view path) {
  Node* dir = Find(first_ino_);
  while (!path.empty()) {
    const size_t slash = path.find('/');
    const std::string_view name = path.substr(0, slash);
    Node* next = Child(dir, name);
    if (next == nullptr) {
      next = AddNode(dir, name, S_IFDIR | 0755);
      next->local = false;  // made in `local` when something is written in it
      Touch(dir);
    }
    if (!next->dir()) return nullptr;
    dir = next;
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
  }
  return dir;
}

bool WriteArea::HasOwn(const Node* n) const {
  if (!n->dir()) return n->local || n->direct || written_.count(n->ino) != 0;
  if (n->local) return true;  // made on this node
  for (const auto& [name, child] : n->children) {
    if (HasOwn(child)) return true;
  }
  return false;
}

void WriteArea::DropPeerNode(Node* n) {
  Touch(n->parent);
  Detach(n);
  n->unlinked = true;
  MaybeFree(n);
}

void WriteArea::ApplyNotice(int peer, std::string_view notice) {
  MutexLock lock(&mu_);
  const auto valid = [](std::string_view name) { return CheckName(name).ok(); };
  NoticeReader in(notice);
  uint8_t op = 0;
  bool ok = in.Get(&op);
  std::string_view path, to;
  if (ok && op == kFileNotice) {
    uint64_t ino = 0, size = 0;
    int64_t mtime_ns = 0;
    uint32_t mode = 0;
    int32_t home = 0;
    ok = in.Get(&ino) && in.Get(&size) && in.Get(&mtime_ns) && in.Get(&mode) && in.Get(&home) &&
         in.Path(&path) && in.done() && ValidPath(path, valid) && (home == -1 || home == peer);
    if (ok) ApplyFile(peer, path, ino, size, mtime_ns, mode, home);
  } else if (ok && op == kDirNotice) {
    uint32_t mode = 0;
    ok = in.Get(&mode) && in.Path(&path) && in.done() && ValidPath(path, valid);
    if (ok) {
      if (Node* d = MakePeerDirs(path); d != nullptr && !d->local) {
        d->mode = S_IFDIR | (mode & 07777);
      }
    }
  } else if (ok && op == kRemoveNotice) {
    ok = in.Path(&path) && in.done() && ValidPath(path, valid);
    Node* n = ok ? Resolve(path) : nullptr;
    if (n != nullptr && n != Find(first_ino_)) {
      if (HasOwn(n) || (n->dir() && !n->children.empty())) {
        peer_conflicts_++;
      } else {
        ForgetKnown(std::string(path));
        DropPeerNode(n);
      }
    }
  } else if (ok && op == kRenameNotice) {
    ok = in.Path(&path) && in.Path(&to) && in.done() && ValidPath(path, valid) &&
         ValidPath(to, valid);
    if (ok) ApplyRename(path, to);
  } else {
    ok = false;
  }
  if (!ok) {
    if (notices_rejected_++ == 0) {
      Log(LogLevel::kWarn, "writes: a malformed notice from rank " + std::to_string(peer) +
                               " dropped (writes.notices_rejected counts them)");
    }
    return;
  }
  notices_applied_++;
}

void WriteArea::ApplyFile(int peer, std::string_view path, uint64_t ino, uint64_t size,
                          int64_t mtime_ns, uint32_t mode, int home) {
  auto [parent, leaf] = SplitLast(path);
  Node* dir = MakePeerDirs(parent);
  if (dir == nullptr) {
    peer_conflicts_++;
    return;
  }
  Node* n = Child(dir, leaf);
  if (n != nullptr && (n->dir() || HasOwn(n))) {
    peer_conflicts_++;  // this node's own copy (or a directory) stays
    return;
  }
  if (n != nullptr && n->home >= 0 && n->home != peer) {
    // Two peers' copies of one path: the later mtime wins, on every node.
    const bool newer = mtime_ns > n->mtime_ns || (mtime_ns == n->mtime_ns && peer > n->home);
    peer_conflicts_++;
    if (!newer) return;
  }
  if (n == nullptr) {
    n = AddNode(dir, leaf, S_IFREG | (mode & 07777));
    Touch(dir);
  }
  n->local = false;
  n->persist_path.clear();
  n->home = home;
  n->home_ino = ino;
  n->size = size;
  n->mtime_ns = mtime_ns;
  n->mode = S_IFREG | (mode & 07777);
  // What persist will hold once its node drained it: replacing that is no conflict.
  known_[std::string(path)] = Stamp{size, mtime_ns};
}

void WriteArea::ApplyRename(std::string_view from, std::string_view to) {
  Node* n = Resolve(from);
  if (n == nullptr || n == Find(first_ino_)) return;
  if (HasOwn(n)) {
    peer_conflicts_++;
    return;
  }
  auto [parent, leaf] = SplitLast(to);
  Node* dir = MakePeerDirs(parent);
  if (dir == nullptr) {
    peer_conflicts_++;
    return;
  }
  for (const Node* up = dir; up != nullptr; up = up->parent) {
    if (up == n) return;  // into itself: the sender refused it too
  }
  Node* target = Child(dir, leaf);
  if (target == n) return;
  if (target != nullptr) {
    if (HasOwn(target) || target->dir() != n->dir() ||
        (target->dir() && !target->children.empty())) {
      peer_conflicts_++;
      return;
    }
    ForgetKnown(std::string(to));
    DropPeerNode(target);
  }
  if (auto it = known_.find(std::string(from)); it != known_.end() && !n->dir()) {
    known_[std::string(to)] = it->second;
    known_.erase(it);
  }
  // A persist-only file keeps being read where persist has it until the
  // sender's drain renames it there (Read then finds it at its new path).
  if (!n->dir() && n->home < 0 && n->persist_path.empty()) n->persist_path = PathOf(n);
  Touch(n->parent);
  Detach(n);
  Attach(dir, leaf, n);
  Touch(dir);
}

Status WriteArea::CopyUpFromHome(Node* n) {
  auto dir = LocalDir(n->parent);
  if (!dir.ok()) return dir.status();
  const std::string tmp = "up." + std::to_string(n->ino);
  auto out = OpenBeneath(trash_.get(), tmp, O_CREAT | O_TRUNC | O_WRONLY, 0600);
  if (!out.ok()) return out.status();
  constexpr size_t kChunk = 1u << 20;
  Status st;
  uint64_t at = 0;
  for (;;) {
    auto got = peers_->Read(n->home, n->home_ino, at, kChunk);
    if (!got.ok()) {
      st = got.status();
      break;
    }
    st = WriteAt(out->get(), at, *got, "copy " + PathOf(n));
    if (!st.ok()) break;
    at += got->size();
    if (got->size() < kChunk) break;
  }
  return InstallCopy(n, dir->get(), tmp, out->get(), st, MtimeTimes(n->mtime_ns), at);
}

}  // namespace clairfs::fs
