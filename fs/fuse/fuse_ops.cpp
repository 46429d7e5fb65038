#include "fs/fuse/fuse_ops.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cstring>
#include <string>
#include <vector>

#include "fs/vfs/read_dispatch.hpp"

namespace clairfs::fs {
namespace {

Session& S(fuse_req_t req) { return *static_cast<Session*>(fuse_req_userdata(req)); }

void FillStat(const Attr& a, struct stat* st) {
  std::memset(st, 0, sizeof *st);
  st->st_ino = a.ino;
  st->st_mode = a.mode;
  st->st_nlink = a.nlink;
  st->st_uid = a.uid;
  st->st_gid = a.gid;
  st->st_size = static_cast<off_t>(a.size);
  st->st_blocks = static_cast<blkcnt_t>((a.size + 511) / 512);
  st->st_blksize = 4096;
  timespec t{static_cast<time_t>(a.mtime_ns / 1000000000),
             static_cast<long>(a.mtime_ns % 1000000000)};
  if (t.tv_nsec < 0) {
    t.tv_nsec += 1000000000;
    t.tv_sec -= 1;
  }
  st->st_atim = st->st_mtim = st->st_ctim = t;
}

fuse_entry_param Entry(const Session& s, const Attr& a) {
  fuse_entry_param e;
  std::memset(&e, 0, sizeof e);
  e.ino = a.ino;
  e.generation = 1;
  FillStat(a, &e.attr);
  e.attr_timeout = a.cacheable ? s.options.attr_timeout : 0;
  e.entry_timeout = a.cacheable ? s.options.entry_timeout : 0;
  return e;
}

void Init(void* userdata, fuse_conn_info* conn) {
  Session& s = *static_cast<Session*>(userdata);
  auto want = [conn](unsigned cap) {
    if (conn->capable & cap) conn->want |= cap;
  };
  want(FUSE_CAP_READDIRPLUS);
  conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;  // always plus: the kernel gets every inode at once
  want(FUSE_CAP_PARALLEL_DIROPS);
  want(FUSE_CAP_ASYNC_READ);
  want(FUSE_CAP_AUTO_INVAL_DATA);  // a changed mtime drops cached pages (control files)
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
  conn->time_gran = 1;
  s.initialized.store(true);
}

void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  const Session& s = S(req);
  auto r = s.vfs->Lookup(parent, name);
  if (r.ok()) {
    fuse_entry_param e = Entry(s, *r);
    fuse_reply_entry(req, &e);
  } else if (r.status().IsNotFound()) {
    fuse_entry_param e;  // ino 0: a negative entry the kernel may keep
    std::memset(&e, 0, sizeof e);
    e.entry_timeout = s.vfs->InArea(parent) ? 0 : s.options.negative_timeout;
    fuse_reply_entry(req, &e);
  } else {
    fuse_reply_err(req, r.status().err());
  }
}

void Forget(fuse_req_t req, fuse_ino_t ino, uint64_t n) {
  S(req).vfs->Forget(ino, n);
  fuse_reply_none(req);
}
void ForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  for (size_t i = 0; i < count; ++i) S(req).vfs->Forget(forgets[i].ino, forgets[i].nlookup);
  fuse_reply_none(req);
}

void ReplyAttr(fuse_req_t req, const Result<Attr>& r) {
  if (!r.ok()) {
    fuse_reply_err(req, r.status().err());
    return;
  }
  struct stat st;
  FillStat(*r, &st);
  fuse_reply_attr(req, &st, r->cacheable ? S(req).options.attr_timeout : 0);
}

void GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  ReplyAttr(req, S(req).vfs->GetAttr(ino));
}

void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto r = S(req).vfs->Open(ino, fi->flags);
  if (!r.ok()) {
    fuse_reply_err(req, r.status().err());
  } else if (r->decline) {
    fuse_reply_err(req, ENOSYS);
  } else {
    fi->direct_io = r->direct_io;
    fi->keep_cache = r->keep_cache;
    fuse_reply_open(req, fi);
  }
}

void ReplyEntry(fuse_req_t req, const Result<Attr>& r) {
  if (!r.ok()) {
    fuse_reply_err(req, r.status().err());
    return;
  }
  fuse_entry_param e = Entry(S(req), *r);
  fuse_reply_entry(req, &e);
}

void ReplyStatus(fuse_req_t req, const Status& st) { fuse_reply_err(req, st.ok() ? 0 : st.err()); }

void ReplyRead(fuse_req_t req, const Result<ReadData>& r) {
  if (!r.ok()) {
    fuse_reply_err(req, r.status().err());
  } else if (r->slices.size() <= 1) {
    fuse_reply_buf(req, r->slices.empty() ? nullptr : r->slices[0].data, r->total);
  } else {
    std::vector<iovec> iov(r->slices.size());
    for (size_t i = 0; i < iov.size(); ++i) {
      iov[i].iov_base = const_cast<char*>(r->slices[i].data);
      iov[i].iov_len = r->slices[i].size;
    }
    fuse_reply_iov(req, iov.data(), static_cast<int>(iov.size()));
  }
}

void Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  const Session& s = S(req);
  DispatchRead(s.vfs, s.waiting_reads, ino, static_cast<uint64_t>(off), size,
               [req](const Result<ReadData>& r) { ReplyRead(req, r); });
}

void Release(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, 0); }

void OpenDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto r = S(req).vfs->OpenDir(ino);
  if (!r.ok()) {
    fuse_reply_err(req, r.status().err());
  } else if (r->decline) {
    fuse_reply_err(req, ENOSYS);
  } else {
    fi->cache_readdir = r->cache_listing;
    fi->keep_cache = r->keep_cache;
    fuse_reply_open(req, fi);
  }
}

void ReadDirCommon(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus) {
  const Session& s = S(req);
  std::vector<char> buf(size);
  size_t used = 0;
  Status st = s.vfs->ReadDir(
      ino, static_cast<uint64_t>(off),
      [&](std::string_view name, const Attr& a, uint64_t next) {
        const std::string n(name);
        size_t need;
        if (plus) {
          fuse_entry_param e = Entry(s, a);
          need = fuse_add_direntry_plus(req, buf.data() + used, size - used, n.c_str(), &e,
                                        static_cast<off_t>(next));
        } else {
          struct stat stbuf;
          FillStat(a, &stbuf);
          need = fuse_add_direntry(req, buf.data() + used, size - used, n.c_str(), &stbuf,
                                   static_cast<off_t>(next));
        }
        if (need > size - used) return false;
        used += need;
        return true;
      },
      plus);
  if (!st.ok()) {
    fuse_reply_err(req, st.err());
  } else {
    fuse_reply_buf(req, buf.data(), used);
  }
}

void ReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  ReadDirCommon(req, ino, size, off, false);
}
void ReadDirPlus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  ReadDirCommon(req, ino, size, off, true);
}
void ReleaseDir(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, 0); }

void StatFs(fuse_req_t req, fuse_ino_t) {
  const FsStat f = S(req).vfs->StatFs();
  struct statvfs sv;
  std::memset(&sv, 0, sizeof sv);
  sv.f_bsize = sv.f_frsize = f.block_size;
  sv.f_blocks = f.blocks;
  sv.f_bfree = f.blocks_free;
  sv.f_bavail = f.blocks_available;
  sv.f_files = f.files;
  sv.f_ffree = f.files_free;
  sv.f_namemax = f.name_max;
  sv.f_flag = f.read_only ? ST_RDONLY : 0;
  fuse_reply_statfs(req, &sv);
}

void GetXattr(fuse_req_t req, fuse_ino_t, const char*, size_t) { fuse_reply_err(req, ENODATA); }
void ListXattr(fuse_req_t req, fuse_ino_t, size_t size) {
  if (size == 0) {
    fuse_reply_xattr(req, 0);
  } else {
    fuse_reply_buf(req, nullptr, 0);
  }
}
void ReadLink(fuse_req_t req, fuse_ino_t) { fuse_reply_err(req, EINVAL); }

// Changes: the writable area's; the dataset is read-only (Vfs says EROFS).
void SetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info*) {
  AttrChange c;
  c.mode = (to_set & FUSE_SET_ATTR_MODE) != 0;
  c.new_mode = attr->st_mode;
  c.size = (to_set & FUSE_SET_ATTR_SIZE) != 0;
  c.new_size = static_cast<uint64_t>(attr->st_size);
  c.uid = (to_set & FUSE_SET_ATTR_UID) != 0;
  c.new_uid = attr->st_uid;
  c.gid = (to_set & FUSE_SET_ATTR_GID) != 0;
  c.new_gid = attr->st_gid;
  c.mtime = (to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW)) != 0;
  timespec t = attr->st_mtim;
  if (to_set & FUSE_SET_ATTR_MTIME_NOW) clock_gettime(CLOCK_REALTIME, &t);
  c.new_mtime_ns = int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
  ReplyAttr(req, S(req).vfs->SetAttr(ino, c));
}
void Mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t) {
  if (!S_ISREG(mode)) {
    ReplyStatus(req, S(req).vfs->Unsupported(parent, EPERM));
    return;
  }
  ReplyEntry(req, S(req).vfs->Create(parent, name, mode));
}
void Mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  ReplyEntry(req, S(req).vfs->Mkdir(parent, name, mode));
}
void Unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  ReplyStatus(req, S(req).vfs->Unlink(parent, name));
}
void Rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  ReplyStatus(req, S(req).vfs->Rmdir(parent, name));
}
void Symlink(fuse_req_t req, const char*, fuse_ino_t parent, const char*) {
  ReplyStatus(req, S(req).vfs->Unsupported(parent, EPERM));
}
void Rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t new_parent,
            const char* new_name, unsigned flags) {
  ReplyStatus(req, S(req).vfs->Rename(parent, name, new_parent, new_name, flags));
}
void Link(fuse_req_t req, fuse_ino_t, fuse_ino_t new_parent, const char*) {
  ReplyStatus(req, S(req).vfs->Unsupported(new_parent, EPERM));
}
void Write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off,
           fuse_file_info*) {
  auto r = S(req).vfs->Write(ino, static_cast<uint64_t>(off), buf, size);
  if (r.ok()) {
    fuse_reply_write(req, *r);
  } else {
    fuse_reply_err(req, r.status().err());
  }
}
void Create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi) {
  const Session& s = S(req);
  auto r = s.vfs->Create(parent, name, mode);
  if (!r.ok()) {
    fuse_reply_err(req, r.status().err());
    return;
  }
  fuse_entry_param e = Entry(s, *r);
  fi->keep_cache = 0;
  // A file created write-only (open "wb": torch.save, safetensors, np.save, cp)
  // can be neither read nor mapped through this descriptor, so its writes skip
  // the mount's page cache: the kernel hands the writer's pages to the daemon
  // instead of copying them into its own first, which halves a checkpoint's
  // write time (docs/benchmarks.md, "Checkpoints"). Other opens of the file
  // stay coherent with it: the kernel drops their cached pages a direct write
  // covers. A file created for reading too keeps the page cache, as mmap needs.
  fi->direct_io = (fi->flags & O_ACCMODE) == O_WRONLY ? 1 : 0;
  fuse_reply_create(req, &e, fi);
}
// fsync waits for the drain to the shared file system: a pool thread's work,
// so that the threads reading /dev/fuse go on answering.
void FsyncCommon(fuse_req_t req, fuse_ino_t ino) {
  const Session& s = S(req);
  Vfs* vfs = s.vfs;
  auto answer = [req, vfs, ino] { ReplyStatus(req, vfs->Fsync(ino)); };
  if (s.waiting_reads == nullptr || !s.waiting_reads->TrySubmit(answer)) answer();
}
void Fsync(fuse_req_t req, fuse_ino_t ino, int, fuse_file_info*) { FsyncCommon(req, ino); }
void FsyncDir(fuse_req_t req, fuse_ino_t ino, int, fuse_file_info*) { FsyncCommon(req, ino); }
void SetXattr(fuse_req_t req, fuse_ino_t ino, const char*, const char*, size_t, int) {
  ReplyStatus(req, S(req).vfs->Unsupported(ino, ENOTSUP));
}
void RemoveXattr(fuse_req_t req, fuse_ino_t ino, const char*) {
  ReplyStatus(req, S(req).vfs->Unsupported(ino, ENOTSUP));
}
void Fallocate(fuse_req_t req, fuse_ino_t ino, int, off_t, off_t, fuse_file_info*) {
  ReplyStatus(req, S(req).vfs->Unsupported(ino, EOPNOTSUPP));
}
// Into the area: EOPNOTSUPP, and the kernel copies through READ and WRITE.
void CopyFileRange(fuse_req_t req, fuse_ino_t, off_t, fuse_file_info*, fuse_ino_t ino_out, off_t,
                   fuse_file_info*, size_t, int) {
  ReplyStatus(req, S(req).vfs->Unsupported(ino_out, EOPNOTSUPP));
}

}  // namespace

fuse_lowlevel_ops MakeOps() {
  fuse_lowlevel_ops ops;
  std::memset(&ops, 0, sizeof ops);
  ops.init = Init;
  ops.lookup = Lookup;
  ops.forget = Forget;
  ops.forget_multi = ForgetMulti;
  ops.getattr = GetAttr;
  ops.setattr = SetAttr;
  ops.readlink = ReadLink;
  ops.mknod = Mknod;
  ops.mkdir = Mkdir;
  ops.unlink = Unlink;
  ops.rmdir = Rmdir;
  ops.symlink = Symlink;
  ops.rename = Rename;
  ops.link = Link;
  ops.open = Open;
  ops.read = Read;
  ops.write = Write;
  ops.release = Release;
  ops.opendir = OpenDir;
  ops.readdir = ReadDir;
  ops.readdirplus = ReadDirPlus;
  ops.releasedir = ReleaseDir;
  ops.fsync = Fsync;
  ops.fsyncdir = FsyncDir;
  ops.statfs = StatFs;
  ops.setxattr = SetXattr;
  ops.getxattr = GetXattr;
  ops.listxattr = ListXattr;
  ops.removexattr = RemoveXattr;
  ops.create = Create;
  ops.fallocate = Fallocate;
  ops.copy_file_range = CopyFileRange;
  return ops;
}

}  // namespace clairfs::fs
