// WriteArea's file bytes (fs/vfs/write_area.hpp): reads, writes, and the
// move of a file that no longer fits in `local` to `persist`, where its
// writes go from then on.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "base/log.hpp"
#include "fs/vfs/write_area.hpp"

namespace clairfs::fs {

Result<std::string> WriteArea::Read(uint64_t ino, uint64_t offset, size_t size) {
  int home = -1;  // a peer's file: its node and number there, and its path
  uint64_t home_ino = 0;
  std::string path;
  Fd fd;
  {
    MutexLock lock(&mu_);
    Node* n = Find(ino);
    if (n == nullptr) return Status::NotFound("inode " + std::to_string(ino));
    if (n->dir()) return Status::IOError("is a directory", EISDIR);
    if (n->home >= 0) {
      home = n->home;
      home_ino = n->home_ino;
      path = PathOf(n);
    } else {
      if (!n->local && n->unlinked)
        return Status::IOError("a removed file of an earlier run", ESTALE);
      auto [base, rel] = n->local ? LocalOf(n) : std::pair{persist_.get(), PersistOf(n)};
      auto f = OpenBeneath(base, rel, O_RDONLY);
      if (!f.ok() && !n->local && !n->persist_path.empty() && f.status().err() == ENOENT) {
        // Renamed by a peer, whose drain has renamed it in persist since.
        f = OpenBeneath(persist_.get(), PathOf(n), O_RDONLY);
        if (f.ok()) n->persist_path.clear();
      }
      if (!f.ok()) return f.status();
      fd = std::move(f).value();
    }
  }
  if (home >= 0) {
    // From its node (without the area's lock: the reply may take a while),
    // else from persist once drained there.
    auto got = peers_->Read(home, home_ino, offset, size);
    if (got.ok()) {
      peer_reads_++;
      peer_read_bytes_ += got->size();
      return got;
    }
    peer_fallbacks_++;
    auto f = OpenBeneath(persist_.get(), path, O_RDONLY);
    if (!f.ok()) return got.status();
    fd = std::move(f).value();
  }
  return ReadAt(fd.get(), offset, size);
}

Result<size_t> WriteArea::Write(uint64_t ino, uint64_t offset, const char* data, size_t size) {
  for (int attempt = 0;; ++attempt) {
    auto fd = OpenForWrite(ino);
    if (!fd.ok() && fd.status().err() == ENOSPC && attempt == 0) {
      CLAIRFS_RETURN_IF_ERROR(GoDirect(ino));
      continue;
    }
    if (!fd.ok()) return fd.status();
    size_t done = 0;
    int err = 0;
    while (done < size) {
      const ssize_t n =
          ::pwrite(fd->get(), data + done, size - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        err = errno;
        break;
      }
      done += static_cast<size_t>(n);
    }
    bytes_written_ += done;
    {
      MutexLock lock(&mu_);
      if (Node* n = Find(ino)) MarkWritten(n);
    }
    if (err == ENOSPC && attempt == 0) {
      // `local` is full: the file moves to persist, and the rest is written there.
      CLAIRFS_RETURN_IF_ERROR(GoDirect(ino));
      auto rest = Write(ino, offset + done, data + done, size - done);
      if (!rest.ok()) return done > 0 ? Result<size_t>(done) : rest;
      return done + *rest;
    }
    if (err != 0 && done == 0) return Status::FromErrno(err, "write");
    return done;  // short only with an error after some bytes: the caller retries the rest
  }
}

Result<Fd> WriteArea::OpenForWrite(uint64_t ino) {
  MutexLock lock(&mu_);
  Node* n = Find(ino);
  if (n == nullptr) return Status::NotFound("inode " + std::to_string(ino));
  if (n->dir()) return Status::IOError("is a directory", EISDIR);
  if (n->direct) return OpenBeneath(persist_.get(), PersistOf(n), O_WRONLY);
  Status up = CopyUp(n);
  if (!up.ok() && up.err() == ENOSPC && !n->unlinked) {
    n->direct = true;  // its bytes are in persist already: written there
    direct_files_++;
    return OpenBeneath(persist_.get(), PersistOf(n), O_WRONLY);
  }
  CLAIRFS_RETURN_IF_ERROR(up);
  auto [base, rel] = LocalOf(n);
  return OpenBeneath(base, rel, O_WRONLY);
}

Status WriteArea::GoDirect(uint64_t ino) {
  // The changes queued before go to persist first: the file must not be
  // overtaken there by an older step (an unlink of its name).
  uint64_t seq;
  {
    MutexLock lock(&mu_);
    seq = next_seq_ - 1;
  }
  Status before = WaitDrained(seq);
  if (!before.ok()) return Status::NoSpace("writes: local is full and " + before.message());
  MutexLock lock(&mu_);
  Node* n = Find(ino);
  if (n == nullptr) return Status::NotFound("inode " + std::to_string(ino));
  if (n->direct) {
    return Status::NoSpace("writes: " + options_.local + " and " + options_.persist + " are full");
  }
  if (!n->local) {
    n->direct = true;
    return Status::Ok();
  }
  if (n->unlinked) return Status::NoSpace("writes: " + options_.local + " is full");
  const std::string path = PathOf(n);
  auto in = OpenBeneath(tree_.get(), path, O_RDONLY);
  if (!in.ok()) return in.status();
  // Under the lock: no write of this file may land in `local` meanwhile.
  auto put = CopyIntoPersist(in->get(), path, n->mode & 07777, next_seq_);
  if (!put.ok()) {
    return Status::NoSpace("writes: " + options_.local + " is full and " + options_.persist +
                           " refused " + path + ": " + put.status().message());
  }
  NoteReplaced(path, put->replaced);
  known_[path] = put->made;
  ::unlinkat(tree_.get(), path.c_str(), 0);
  n->local = false;
  n->direct = true;
  n->size = put->made.size;
  n->mtime_ns = put->made.mtime_ns;
  written_.erase(ino);
  AnnounceFile(n);  // its bytes are read from persist now
  if (direct_files_++ == 0) {
    Log(LogLevel::kWarn, "writes: " + options_.local + " is full: " + path +
                             " (and every file that does not fit) is written to " +
                             options_.persist + " directly");
  }
  return Status::Ok();
}

}  // namespace clairfs::fs
