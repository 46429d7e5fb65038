// WriteArea's drain: the thread that replays the area's queued changes on
// `persist` (write_area.hpp says what each step does and why in this order).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <vector>

#include "base/log.hpp"
#include "base/thread_name.hpp"
#include "fs/vfs/write_area.hpp"

namespace clairfs::fs {
namespace {

Status Sync(int fd, const std::string& what) {
  if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) {
    return Status::FromErrno(errno, "fsync " + what);
  }
  return Status::Ok();
}

}  // namespace

void WriteArea::ForgetKnown(const std::string& path) {
  const std::string below = path + "/";
  for (auto it = known_.lower_bound(path); it != known_.end();) {
    if (it->first != path && it->first.compare(0, below.size(), below) != 0) break;
    it = known_.erase(it);
  }
}

std::optional<WriteArea::Stamp> WriteArea::StampAt(int dir, const std::string& name) {
  struct stat st;
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
    return std::nullopt;
  }
  return Stamp{static_cast<uint64_t>(st.st_size), MtimeNs(st)};
}

void WriteArea::NoteReplaced(const std::string& path, const std::optional<Stamp>& there) {
  if (!there) return;
  auto it = known_.find(path);
  if (it != known_.end() && it->second == *there) return;
  conflicts_++;
  Log(LogLevel::kWarn, "writes: " + path + " in " + options_.persist +
                           " was written by another node (or job) too; this node's copy, "
                           "drained later, replaces it whole");
}

void WriteArea::Start() {
  MutexLock lock(&mu_);  // requests may arrive meanwhile (WaitDrained reads draining_)
  draining_ = true;
  drain_ = std::thread([this] {
    NameThread("clairfs-drain");
    DrainLoop();
  });
  notices_ = std::thread([this] {
    NameThread("clairfs-notices");
    NoticeLoop();
  });
}

Status WriteArea::Finish(std::chrono::milliseconds stalled) {
  MutexLock lock(&mu_);
  stopping_ = true;
  changed_.NotifyAll();
  uint64_t last = replayed_seq_;
  auto since = std::chrono::steady_clock::now();
  Status left;
  while (draining_ && !(queue_.empty() && written_.empty())) {
    changed_.WaitUntil(&lock, std::chrono::steady_clock::now() + std::chrono::milliseconds(100));
    if (replayed_seq_ != last) {
      last = replayed_seq_;
      since = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - since >= stalled) {
      left = Status::IOError(
          "writes: " + std::to_string(queue_.size()) + " change(s) not drained to " +
              options_.persist + " (" + (failing_.ok() ? "no progress" : failing_.message()) +
              "); they stay in " + options_.local + " and are drained at the next start",
          EIO);
      break;
    }
  }
  if (!draining_ && !(queue_.empty() && written_.empty())) {
    left = Status::IOError("writes: the drain never started", EIO);
  }
  abandon_ = true;
  changed_.NotifyAll();
  lock.Unlock();
  if (drain_.joinable()) drain_.join();
  if (left.ok()) {
    Log(LogLevel::kInfo, "writes: " + std::to_string(files_drained_.load()) + " file(s), " +
                             std::to_string(bytes_drained_.load()) + " bytes drained to " +
                             options_.persist);
    // All of it is in persist: nothing here may be taken for a crashed run's
    // undrained work by the next daemon (and drained over what other nodes or
    // jobs have written to persist since).
    Status cleared = RemoveTreeAt(local_.get(), "tree");
    if (!cleared.ok()) {
      Log(LogLevel::kWarn, "writes: could not empty " + options_.local +
                               "/tree (the next daemon there drains what differs from persist): " +
                               cleared.message());
    }
  }
  return left;
}

std::chrono::milliseconds WriteArea::SettleTick() const {
  return std::max(std::chrono::milliseconds(10), options_.settle / 2);
}

void WriteArea::DrainLoop() {
  const auto tick = SettleTick();
  MutexLock lock(&mu_);
  while (!abandon_) {
    QueueSettled(/*all=*/stopping_);
    if (queue_.empty()) {
      changed_.WaitUntil(&lock, std::chrono::steady_clock::now() + tick);
      continue;
    }
    const Step step = queue_.front();
    lock.Unlock();
    Status st = Replay(step);
    lock.Lock();
    if (st.ok()) {
      queue_.pop_front();
      replayed_seq_ = step.seq;
      steps_replayed_++;
      if (!failing_.ok())
        Log(LogLevel::kInfo, "writes: the drain to " + options_.persist + " goes on");
      failing_ = Status::Ok();
    } else {
      if (failing_.ok()) {
        Log(LogLevel::kError, "writes: draining " + step.path + " to " + options_.persist +
                                  " failed, retried every second: " + st.message());
      }
      failing_ = st;
      drain_failures_++;
      changed_.NotifyAll();
      changed_.WaitUntil(&lock, std::chrono::steady_clock::now() + std::chrono::seconds(1));
    }
    changed_.NotifyAll();
  }
}

Result<Fd> WriteArea::PersistDir(std::string_view rel, bool make) {
  if (make) return MakeDirsBeneath(persist_.get(), rel, 0755);
  return OpenBeneath(persist_.get(), rel, O_RDONLY | O_DIRECTORY);
}

Status WriteArea::Replay(const Step& step) {
  switch (step.kind) {
    case Step::kPut:
      return ReplayPut(step);
    case Step::kMeta:
      return ReplayMeta(step);
    case Step::kMkdir: {
      auto [dir, leaf] = SplitLast(step.path);
      auto at = PersistDir(dir, true);
      if (!at.ok()) return at.status();
      uint32_t mode = 0755;
      {
        MutexLock lock(&mu_);
        if (Node* n = Find(step.ino)) mode = n->mode & 07777;
      }
      const std::string name(leaf);
      if (::mkdirat(at->get(), name.c_str(), mode) != 0) {
        if (errno != EEXIST) return Status::FromErrno(errno, "mkdir " + step.path);
        struct stat st;
        if (::fstatat(at->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            !S_ISDIR(st.st_mode)) {
          // Not a directory (a file, a symlink someone put there): the area's
          // state wins.
          CLAIRFS_RETURN_IF_ERROR(RemoveTreeAt(at->get(), name));
          if (::mkdirat(at->get(), name.c_str(), mode) != 0) {
            return Status::FromErrno(errno, "mkdir " + step.path);
          }
        }
      }
      return Sync(at->get(), dir.empty() ? "." : std::string(dir));
    }
    case Step::kUnlink:
    case Step::kRmdir: {
      {
        MutexLock lock(&mu_);
        ForgetKnown(step.path);
      }
      auto [dir, leaf] = SplitLast(step.path);
      auto at = PersistDir(dir, false);
      if (!at.ok()) return at.status().err() == ENOENT ? Status::Ok() : at.status();
      CLAIRFS_RETURN_IF_ERROR(RemoveTreeAt(at->get(), std::string(leaf)));
      return Sync(at->get(), std::string(dir));
    }
    case Step::kRename: {
      auto [from_dir, from_leaf] = SplitLast(step.path);
      auto [to_dir, to_leaf] = SplitLast(step.to);
      auto src = PersistDir(from_dir, false);
      if (!src.ok()) return src.status().err() == ENOENT ? Status::Ok() : src.status();
      auto dst = PersistDir(to_dir, true);
      if (!dst.ok()) return dst.status();
      const std::string a(from_leaf), b(to_leaf);
      const std::optional<Stamp> replaced = StampAt(dst->get(), b);
      if (::renameat(src->get(), a.c_str(), dst->get(), b.c_str()) != 0) {
        if (errno == ENOENT) return Status::Ok();  // never drained: its put comes later
        if (errno != ENOTEMPTY && errno != EEXIST && errno != EISDIR && errno != ENOTDIR) {
          return Status::FromErrno(errno, "rename " + step.path);
        }
        // Persist holds something else under the new name (a run that
        // stopped half way): the area's state wins.
        CLAIRFS_RETURN_IF_ERROR(RemoveTreeAt(dst->get(), b));
        if (::renameat(src->get(), a.c_str(), dst->get(), b.c_str()) != 0) {
          return Status::FromErrno(errno, "rename " + step.path);
        }
      }
      {
        MutexLock lock(&mu_);
        NoteReplaced(step.to, replaced);
        // A file renamed while only in persist: its bytes are at the new name now.
        if (Node* n = Find(step.ino); n != nullptr && !n->local && n->persist_path == step.path) {
          n->persist_path = step.to == PathOf(n) ? std::string() : step.to;
        }
        // What persist had under the old name it now has under the new one.
        std::vector<std::pair<std::string, Stamp>> moved;
        const std::string below = step.path + "/";
        for (auto it = known_.lower_bound(step.path); it != known_.end();) {
          if (it->first != step.path && it->first.compare(0, below.size(), below) != 0) break;
          moved.emplace_back(step.to + it->first.substr(step.path.size()), it->second);
          it = known_.erase(it);
        }
        ForgetKnown(step.to);
        for (auto& [path, stamp] : moved) known_[path] = stamp;
      }
      CLAIRFS_RETURN_IF_ERROR(Sync(dst->get(), step.to));
      return Sync(src->get(), step.path);
    }
  }
  return Status::Ok();
}

Status WriteArea::ReplayPut(const Step& step) {
  Fd in;
  uint32_t mode = 0644;
  for (int attempt = 0;; ++attempt) {
    std::pair<int, std::string> at;
    {
      MutexLock lock(&mu_);
      Node* n = Find(step.ino);
      // Gone, or only in persist: nothing of it to copy (a later step removes it).
      if (n == nullptr || n->unlinked || n->dir() || !n->local) return Status::Ok();
      at = LocalOf(n);
      mode = n->mode & 07777;
    }
    auto f = OpenBeneath(at.first, at.second, O_RDONLY);
    if (f.ok()) {
      in = std::move(f).value();
      break;
    }
    // Renamed between the lookup and the open: look again.
    if (f.status().err() != ENOENT || attempt == 3) return f.status();
  }
  auto put = CopyIntoPersist(in.get(), step.path, mode, step.seq);
  if (!put.ok()) return put.status();
  MutexLock lock(&mu_);
  NoteReplaced(step.path, put->replaced);
  known_[step.path] = put->made;
  bytes_drained_ += put->made.size;
  files_drained_++;
  return Status::Ok();
}

Result<WriteArea::Copied> WriteArea::CopyIntoPersist(int in, const std::string& path, uint32_t mode,
                                                     uint64_t tag) {
  struct stat st;
  if (::fstat(in, &st) != 0) return Status::FromErrno(errno, "stat " + path);
  auto [dir, leaf] = SplitLast(path);
  auto at = PersistDir(dir, true);
  if (!at.ok()) return at.status();
  const std::string tmp =
      std::string(kDrainPrefix) + std::to_string(::getpid()) + "." + std::to_string(tag);
  auto out = OpenBeneath(at->get(), tmp, O_CREAT | O_EXCL | O_WRONLY, 0600);
  if (!out.ok()) return out.status();
  Copied result;
  Status copied = CopyFileBytes(in, out->get(), static_cast<uint64_t>(st.st_size));
  const timespec times[2] = {st.st_mtim, st.st_mtim};
  if (copied.ok() && (::fchmod(out->get(), mode) != 0 || ::futimens(out->get(), times) != 0)) {
    copied = Status::FromErrno(errno, "set attributes of " + path);
  }
  if (copied.ok()) copied = Sync(out->get(), path);
  const std::string name(leaf);
  struct stat made;
  if (copied.ok() && ::fstat(out->get(), &made) != 0) copied = Status::FromErrno(errno, "stat");
  struct stat there;
  if (copied.ok() && ::fstatat(at->get(), name.c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISREG(there.st_mode)) {
    result.replaced = Stamp{static_cast<uint64_t>(there.st_size), MtimeNs(there)};
  }
  if (copied.ok() && ::renameat(at->get(), tmp.c_str(), at->get(), name.c_str()) != 0) {
    if (errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST) {
      copied = RemoveTreeAt(at->get(), name);
      if (copied.ok() && ::renameat(at->get(), tmp.c_str(), at->get(), name.c_str()) != 0) {
        copied = Status::FromErrno(errno, "rename into " + path);
      }
    } else {
      copied = Status::FromErrno(errno, "rename into " + path);
    }
  }
  if (!copied.ok()) {
    ::unlinkat(at->get(), tmp.c_str(), 0);
    return copied;
  }
  CLAIRFS_RETURN_IF_ERROR(Sync(at->get(), dir.empty() ? "." : std::string(dir)));
  result.made = Stamp{static_cast<uint64_t>(made.st_size), MtimeNs(made)};
  return result;
}

Status WriteArea::ReplayMeta(const Step& step) {
  uint32_t mode;
  int64_t mtime_ns;
  bool dir;
  {
    MutexLock lock(&mu_);
    Node* n = Find(step.ino);
    if (n == nullptr || n->unlinked) return Status::Ok();
    const Attr a = AttrOf(n);
    mode = n->mode & 07777;
    mtime_ns = a.mtime_ns;
    dir = n->dir();
  }
  auto f = OpenBeneath(persist_.get(), step.path, dir ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  if (!f.ok()) return f.status().err() == ENOENT ? Status::Ok() : f.status();
  const auto times = MtimeTimes(mtime_ns);
  if (::fchmod(f->get(), mode) != 0 || ::futimens(f->get(), times.data()) != 0) {
    return Status::FromErrno(errno, "set attributes of " + step.path);
  }
  return Sync(f->get(), step.path);
}

}  // namespace clairfs::fs
