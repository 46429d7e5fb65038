// WriteArea: the writable directory beside the read-only dataset (config
// writes_dir), for a job's checkpoints, logs and samples (docs/fuse.md,
// "Writing through the mount").
//
// Bytes land on node-local storage (`local`) and are drained in the
// background to `persist`, a directory on the shared file system, under the
// same paths. The area is the union of the two: what `persist` held when the
// daemon started (an earlier run's outputs, read from there) with this run's
// changes on top. Every change of the area - a file's bytes, mkdir, rename,
// unlink, rmdir, chmod - is queued, in the order it happened, as one step of
// the drain, which replays them on `persist`; so `persist` passes through the
// area's own states and ends equal to it. A file's bytes are queued once the
// file has had no write for `settle` (the kernel tells a FUSE file system of
// no close when it opens files itself, config no_open), at fsync, and at Finish.
//
//   local/tree/PATH    the area's files written on this node (or copied up)
//   local/trash/INO    unlinked files the kernel may still read or write
//   persist/PATH       the drained area; a file is copied to a hidden
//                      ".clairfs-drain.*" name beside it, fsynced, renamed.
//
// fsync on a file returns once it (and every change queued before) is in
// `persist` and fsynced there; on a directory, once everything queued is. A
// drain step that fails is retried every second, and fsync meanwhile fails
// with the step's errno. At start, files in local/tree whose size or mtime
// differ from persist's (a daemon killed before its drain finished) are
// queued first. Names and symlinks never lead outside `local` or `persist`
// (fs/vfs/beneath.hpp); the area has no symlinks or hard links (EPERM).
//
// Inode numbers are handed out from `first_ino`, the area's root first. A
// node lives while it is in the tree or the kernel still knows it (lookups
// not forgotten); an unlinked file's bytes stay in local/trash until then.
//
// Thread-safe: mu_ guards the tree and the drain's queue, and is held for the
// local metadata calls that keep `local` equal to the tree; file bytes are
// read, written and drained outside it.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "base/json.hpp"
#include "base/mutex.hpp"
#include "base/status.hpp"
#include "fs/vfs/attr.hpp"
#include "fs/vfs/beneath.hpp"

namespace clairfs::fs {

struct WriteAreaOptions {
  std::string name;     // the area's directory in the mount root
  std::string local;    // node-local directory (made if missing)
  std::string persist;  // directory on the shared file system (made if missing)
  std::chrono::milliseconds settle{200};
  uint32_t uid = 0, gid = 0;  // owner reported for every inode
};

// How an area reaches the job's other daemons (clairfsd wires the cluster's
// transport; tests connect areas directly).
class WriteAreaPeers {
 public:
  virtual ~WriteAreaPeers() = default;
  // `notice` to every other daemon's area (its ApplyNotice), in order.
  virtual void Publish(std::string notice) = 0;
  // Up to `size` bytes at `offset` of file `ino` of daemon `home`'s area (its
  // ServePeer); fewer at the end of the file.
  virtual Result<std::string> Read(int home, uint64_t ino, uint64_t offset, size_t size) = 0;
};

class WriteArea {
 public:
  // Reads `persist` and `local`, queues what the last run left undrained.
  // Fails when a directory cannot be made or read, or when another daemon
  // holds `local`.
  static Result<std::unique_ptr<WriteArea>> Open(WriteAreaOptions options, uint64_t first_ino);
  ~WriteArea();  // stops the drain (Finish first to wait for it)

  // Starts the drain thread.
  void Start();
  // Queues every written file now and waits until the drain has replayed
  // everything or has made no progress for `stalled`; then stops it. Ok: all
  // is in persist, and local/tree is emptied. Not ok: what is left (it stays
  // in `local` and is drained at the next start).
  Status Finish(std::chrono::milliseconds stalled);

  // Before Start: this node (rank `rank`) publishes every change it queues
  // for the drain to `peers` (a file once it settles, or at fsync), and reads
  // the files peers publish from their nodes (falling back to persist).
  void Connect(WriteAreaPeers* peers, int rank);
  // A peer's change: its file, directory, removal or rename shows in this
  // area (fs/vfs/write_area_peers.cpp says which changes win over which).
  // A malformed notice is counted and dropped.
  void ApplyNotice(int peer, std::string_view notice);
  // The same, applied soon by a thread of the area's own (from Start on):
  // for the transport's thread, which must not wait for the area's lock
  // while a holder of it waits for a reply that thread delivers.
  void QueueNotice(int peer, std::string_view notice);
  // A peer's read of a file this node published: ESTALE when this node no
  // longer has its bytes (the peer then reads persist). Never takes the
  // area's lock, so two nodes copying each other's files never wait on each other.
  Result<std::string> ServePeer(uint64_t ino, uint64_t offset, size_t size);

  const std::string& name() const { return options_.name; }
  bool Owns(uint64_t ino) const { return ino >= first_ino_; }
  uint64_t root_ino() const { return first_ino_; }

  // Every call that answers with an entry (Lookup, Mkdir, Create, a ReadDir
  // with `plus`) counts one kernel lookup of it; Forget gives them back.
  Result<Attr> Lookup(uint64_t parent, std::string_view name);
  // The area's root as an entry of the mount's root (a lookup of it).
  Attr RootEntry();
  void Forget(uint64_t ino, uint64_t count);
  Result<Attr> GetAttr(uint64_t ino);
  Result<Attr> SetAttr(uint64_t ino, const AttrChange& change);
  Result<Attr> Mkdir(uint64_t parent, std::string_view name, uint32_t mode);
  // A new regular file (EEXIST if the name exists).
  Result<Attr> Create(uint64_t parent, std::string_view name, uint32_t mode);
  Status Unlink(uint64_t parent, std::string_view name);
  Status Rmdir(uint64_t parent, std::string_view name);
  // flags: 0 or RENAME_NOREPLACE (RENAME_EXCHANGE and others: EINVAL).
  Status Rename(uint64_t parent, std::string_view name, uint64_t new_parent,
                std::string_view new_name, unsigned flags);
  Status CheckOpen(uint64_t ino, bool dir);
  // Up to `size` bytes at `offset` (fewer at the end of the file).
  Result<std::string> Read(uint64_t ino, uint64_t offset, size_t size);
  Result<size_t> Write(uint64_t ino, uint64_t offset, const char* data, size_t size);
  // A file: it and all queued before it; a directory: all queued.
  Status Fsync(uint64_t ino);
  Status ReadDir(uint64_t ino, uint64_t offset, bool plus, const DirEmit& emit);
  // Space of `local`.
  FsStat StatFs() const;
  // Members of stats.json's "writes" object.
  void WriteStats(JsonWriter& w);

  // The drain's state, for tests: steps queued and not yet replayed.
  size_t pending() const;

 private:
  // A file or directory of the area.
  struct Node {
    uint64_t ino = 0;
    Node* parent = nullptr;  // null: the root, or a node unlinked
    std::string name;
    uint32_t mode = 0;  // type and permission bits
    bool local = true;  // a file's bytes are in `local` (else on `home`, or in persist at its path)
    // A file a peer published: its bytes are on rank `home` (file `home_ino`
    // there), and in persist once that node drained it. -1: not a peer's.
    int home = -1;
    uint64_t home_ino = 0;
    bool unlinked = false;
    // Written in persist directly: it did not fit in `local` (implies !local).
    bool direct = false;
    // A persist-only file renamed in the area before the drain renamed it in
    // persist: where its bytes are until then ("": at its path).
    std::string persist_path;
    uint64_t size = 0;       // a persist-only file's, from the scan
    int64_t mtime_ns = 0;    // directories and persist-only files
    int64_t written_ns = 0;  // last write, for `settle`
    uint64_t lookups = 0;
    uint32_t subdirs = 0;
    std::map<std::string, Node*, std::less<>> children;
    std::map<uint64_t, Node*> by_ino;  // the children again, for readdir's cookies
    bool dir() const { return S_ISDIR(mode); }
  };
  struct Step {
    enum Kind { kPut, kMeta, kMkdir, kUnlink, kRmdir, kRename } kind;
    std::string path, to;  // area-relative; `to` for kRename
    uint64_t ino = 0;      // kPut, kMeta, kMkdir: whose bytes or mode
    uint64_t seq = 0;
    int64_t queued_ns = 0;
  };

  // The prefix of the drain's temporaries in persist (never shown, never a
  // name the job may take).
  static constexpr std::string_view kDrainPrefix = ".clairfs-drain.";
  static int64_t NowNs();  // wall clock (mtimes, settle, lag)
  // EINVAL, ENAMETOOLONG, or EPERM (the drain's prefix) for a bad entry name.
  static Status CheckName(std::string_view name);

  WriteArea(WriteAreaOptions options, uint64_t first_ino);
  Status Load();
  Status ScanPersist(int dir_fd, Node* dir, const std::string& rel);
  Status ScanLocal(int dir_fd, Node* dir, const std::string& rel);

  Node* Find(uint64_t ino) CLAIRFS_REQUIRES(mu_);
  Result<Node*> Dir(uint64_t ino) CLAIRFS_REQUIRES(mu_);
  Node* Child(Node* dir, std::string_view name) CLAIRFS_REQUIRES(mu_);
  Node* AddNode(Node* parent, std::string_view name, uint32_t mode) CLAIRFS_REQUIRES(mu_);
  // A persist-only entry, `st` its stat there.
  Node* AddFromPersist(Node* dir, std::string_view name, const struct stat& st)
      CLAIRFS_REQUIRES(mu_);
  // Whether a queued step removes `path` (or a directory above it) from persist.
  bool RemovalPending(const std::string& path) const CLAIRFS_REQUIRES(mu_);
  // `name` as persist has it now (another node drained it), added; null if absent.
  Node* Discover(Node* dir, std::string_view name) CLAIRFS_REQUIRES(mu_);
  // Every entry of persist's copy of `dir` that the tree lacks.
  void DiscoverAll(Node* dir) CLAIRFS_REQUIRES(mu_);
  // A persist-only file's size and mtime as persist has them now; false (and
  // the node unlinked) when it is gone from there.
  bool Refresh(Node* n) CLAIRFS_REQUIRES(mu_);
  void Detach(Node* n) CLAIRFS_REQUIRES(mu_);
  void Attach(Node* parent, std::string_view name, Node* n) CLAIRFS_REQUIRES(mu_);
  std::string PathOf(const Node* n) const CLAIRFS_REQUIRES(mu_);
  Attr AttrOf(const Node* n) CLAIRFS_REQUIRES(mu_);
  // Where a node's local bytes are: (directory fd, relative path).
  std::pair<int, std::string> LocalOf(const Node* n) const CLAIRFS_REQUIRES(mu_);
  // Makes a persist-only file (or every file under a directory) local.
  Status CopyUp(Node* n) CLAIRFS_REQUIRES(mu_);
  Status CopyUpFromPersist(Node* n) CLAIRFS_REQUIRES(mu_);
  // A copy-up's end: `tmp` in trash (written through `out`, `copied` says
  // how that went) gets the node's mode and `times` and takes its name in
  // `dir` of local, and the node is this node's own; removed on any failure.
  Status InstallCopy(Node* n, int dir, const std::string& tmp, int out, Status copied,
                     const std::array<timespec, 2>& times, uint64_t bytes) CLAIRFS_REQUIRES(mu_);
  // For a new entry `name` in directory `parent`: checks the name (EEXIST if
  // taken), sets `dir`, returns the local directory to make it in.
  Result<Fd> NewEntryDir(uint64_t parent, std::string_view name, Node** dir) CLAIRFS_REQUIRES(mu_);
  // The local directory of an area directory, made where missing.
  Result<Fd> LocalDir(Node* dir) CLAIRFS_REQUIRES(mu_);
  // Unlinks a node from the tree: a file's local bytes go to trash.
  Status Remove(Node* n) CLAIRFS_REQUIRES(mu_);
  void MaybeFree(Node* n) CLAIRFS_REQUIRES(mu_);
  void Touch(Node* dir) CLAIRFS_REQUIRES(mu_);
  void MarkWritten(Node* n) CLAIRFS_REQUIRES(mu_);
  uint64_t Queue(Step::Kind kind, std::string path, uint64_t ino, std::string to = {})
      CLAIRFS_REQUIRES(mu_);
  // Queues the bytes of written files idle for `settle` (all of them: now).
  void QueueSettled(bool all) CLAIRFS_REQUIRES(mu_);
  Status WaitDrained(uint64_t seq);

  // The drain (write_area_drain.cpp).
  void DrainLoop();
  // How often the drain and notice threads look for settled files.
  std::chrono::milliseconds SettleTick() const;
  Status Replay(const Step& step);
  Status ReplayPut(const Step& step);
  Status ReplayMeta(const Step& step);
  Result<Fd> PersistDir(std::string_view rel, bool make);
  // `path` and everything below it leave known_.
  void ForgetKnown(const std::string& path) CLAIRFS_REQUIRES(mu_);
  // The file `name` in directory `dir` (none: absent or not a file).
  struct Stamp;
  static std::optional<Stamp> StampAt(int dir, const std::string& name);
  // The drain replaced `there` at `path` in persist: a file that is not the
  // one this daemon knew there is a conflict (counted, logged).
  void NoteReplaced(const std::string& path, const std::optional<Stamp>& there)
      CLAIRFS_REQUIRES(mu_);
  // Copies all of `in` to persist at `path` (a hidden temporary beside it,
  // `tag` in its name; fsynced; renamed over what was there).
  struct Copied;
  Result<Copied> CopyIntoPersist(int in, const std::string& path, uint32_t mode, uint64_t tag);
  // A file that no longer fits in `local`: its bytes moved to persist, where
  // its writes go from now on (Node::direct).
  Status GoDirect(uint64_t ino);
  // A descriptor to write a file's bytes (copied up first, unless direct).
  Result<Fd> OpenForWrite(uint64_t ino);
  // Where a persist-only file's bytes are in persist.
  std::string PersistOf(const Node* n) const CLAIRFS_REQUIRES(mu_);

  // Peers (write_area_peers.cpp).
  // The notice of a step just queued, to every peer.
  void Announce(const Step& step) CLAIRFS_REQUIRES(mu_);
  void AnnounceFile(Node* n) CLAIRFS_REQUIRES(mu_);
  // This node no longer serves `ino`'s bytes to peers.
  void Unserve(uint64_t ino);
  // The node at area path `path` (null: none), and its directories made as
  // peers' directories where missing (null: a file is in the way).
  Node* Resolve(std::string_view path) CLAIRFS_REQUIRES(mu_);
  Node* MakePeerDirs(std::string_view path) CLAIRFS_REQUIRES(mu_);
  // Whether `n` or anything below it has bytes or changes of this node's own.
  bool HasOwn(const Node* n) const CLAIRFS_REQUIRES(mu_);
  // Drops a peer's node from the tree (a peer removed or replaced it).
  void DropPeerNode(Node* n) CLAIRFS_REQUIRES(mu_);
  void ApplyFile(int peer, std::string_view path, uint64_t ino, uint64_t size, int64_t mtime_ns,
                 uint32_t mode, int home) CLAIRFS_REQUIRES(mu_);
  void ApplyRename(std::string_view from, std::string_view to) CLAIRFS_REQUIRES(mu_);
  // Copies a peer's file to `local` from its node (CopyUp's first choice).
  Status CopyUpFromHome(Node* n) CLAIRFS_REQUIRES(mu_);

  const WriteAreaOptions options_;
  const uint64_t first_ino_;
  Fd local_, tree_, trash_, persist_, lock_;

  mutable Mutex mu_;
  CondVar changed_;  // a step was queued or replayed, or stopping
  std::unordered_map<uint64_t, std::unique_ptr<Node>> nodes_ CLAIRFS_GUARDED_BY(mu_);
  uint64_t next_ino_ CLAIRFS_GUARDED_BY(mu_);
  std::set<uint64_t> written_ CLAIRFS_GUARDED_BY(mu_);  // files with writes not yet queued
  std::deque<Step> queue_ CLAIRFS_GUARDED_BY(mu_);
  // What this daemon takes persist to hold (its scan, its discoveries, its
  // own drained copies): a file there that differs was written by another
  // node, and replacing it is a conflict (counted, logged).
  struct Stamp {
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    bool operator==(const Stamp&) const = default;
  };
  struct Copied {
    Stamp made;                     // the copy, as made
    std::optional<Stamp> replaced;  // the file it replaced
  };
  std::map<std::string, Stamp> known_ CLAIRFS_GUARDED_BY(mu_);
  uint64_t next_seq_ CLAIRFS_GUARDED_BY(mu_) = 1;
  uint64_t replayed_seq_ CLAIRFS_GUARDED_BY(mu_) = 0;
  Status failing_ CLAIRFS_GUARDED_BY(mu_);         // the head step's last failure
  bool stopping_ CLAIRFS_GUARDED_BY(mu_) = false;  // Finish: queue every written file now
  bool abandon_ CLAIRFS_GUARDED_BY(mu_) = false;   // the drain thread ends at once
  bool draining_ CLAIRFS_GUARDED_BY(mu_) = false;  // Start has run
  std::thread drain_;  // set by Start (under mu_), joined by Finish or the destructor

  std::atomic<uint64_t> bytes_written_{0}, bytes_drained_{0}, files_drained_{0};
  std::atomic<uint64_t> steps_replayed_{0}, drain_failures_{0}, copied_up_bytes_{0};
  std::atomic<uint64_t> recovered_files_{0}, discovered_{0}, conflicts_{0}, direct_files_{0};

  WriteAreaPeers* peers_ = nullptr;  // set by Connect, before Start
  int rank_ = 0;
  // The files this node published, open for peers' reads (an open file keeps
  // its bytes across renames and unlinks); at most kMaxServed, the oldest
  // closed first (their readers fall back to persist).
  static constexpr size_t kMaxServed = 4096;
  Mutex serve_mu_;  // after mu_
  // The notice thread: applies QueueNotice's notices, and every SettleTick
  // queues (so publishes) the files that have settled.
  void NoticeLoop();
  Mutex inbox_mu_;  // never held with mu_
  CondVar inbox_cv_;
  std::deque<std::pair<int, std::string>> inbox_ CLAIRFS_GUARDED_BY(inbox_mu_);
  bool inbox_stop_ CLAIRFS_GUARDED_BY(inbox_mu_) = false;
  std::thread notices_;  // set by Start, joined by the destructor
  std::map<uint64_t, std::shared_ptr<Fd>> served_ CLAIRFS_GUARDED_BY(serve_mu_);
  std::atomic<uint64_t> notices_sent_{0}, notices_applied_{0}, notices_rejected_{0};
  std::atomic<uint64_t> peer_reads_{0}, peer_read_bytes_{0}, peer_fallbacks_{0};
  std::atomic<uint64_t> served_reads_{0}, served_bytes_{0}, peer_conflicts_{0};
};

}  // namespace clairfs::fs
