// Status, Result<T>, and the POSIX file helpers of the format library.
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/status.hpp"
#include "partitioner/format/file_io.hpp"
#include "tests/support/format_fixture.hpp"

namespace clairfs::format {
namespace {

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST_CASE("Status FromErrno maps errno to codes with the context", "[status]") {
  Status nf = Status::FromErrno(ENOENT, "open /data/x.jpg");
  CHECK(nf.code() == Code::kNotFound);
  CHECK(nf.IsNotFound());
  CHECK_FALSE(nf.ok());
  CHECK(nf.err() == ENOENT);
  CHECK(Contains(nf.message(), "open /data/x.jpg"));
  CHECK(Contains(nf.message(), std::strerror(ENOENT)));
  CHECK(nf.ToString() == "NotFound: " + nf.message());

  Status full = Status::FromErrno(ENOSPC, "write part-00003");
  CHECK(full.code() == Code::kNoSpace);
  CHECK(full.err() == ENOSPC);
  CHECK(Contains(full.message(), "write part-00003"));
  CHECK(Contains(full.ToString(), "NoSpace: "));
  CHECK(Status::FromErrno(EDQUOT, "q").code() == Code::kNoSpace);
  CHECK(Status::FromErrno(EEXIST, "e").code() == Code::kAlreadyExists);
  CHECK(Status::FromErrno(EINVAL, "i").code() == Code::kInvalidArgument);
  Status other = Status::FromErrno(EACCES, "open /secret");
  CHECK(other.code() == Code::kIOError);
  CHECK(other.err() == EACCES);  // the errno survives for the FUSE reply
  CHECK(Contains(other.message(), "/secret"));
}

TEST_CASE("Status constructors carry code errno and message", "[status]") {
  Status ok;
  CHECK(ok.ok());
  CHECK(ok.err() == 0);
  CHECK(ok.ToString() == "OK");
  CHECK(Status::Ok().ok());
  Status c = Status::Corruption("part-00001: checksum mismatch");
  CHECK(c.IsCorruption());
  CHECK(c.err() == EIO);
  CHECK(c.ToString() == "Corruption: part-00001: checksum mismatch");
  CHECK(Status::NotFound("x").err() == ENOENT);
  CHECK(Status::IOError("x").err() == EIO);
  CHECK(Status::IOError("x", EROFS).err() == EROFS);
  CHECK(Status::InvalidArgument("x").err() == EINVAL);
  CHECK(Status::AlreadyExists("x").err() == EEXIST);
  CHECK(Status::Unsupported("x").err() == ENOTSUP);
  CHECK(Status::Unsupported("x").ToString() == "Unsupported: x");
}

Status FailsEarly(bool fail, int* reached) {
  CLAIRFS_RETURN_IF_ERROR(fail ? Status::NotFound("early") : Status::Ok());
  ++*reached;
  return Status::Ok();
}

TEST_CASE("Result holds a value or a status", "[status]") {
  Result<int> v(42);
  REQUIRE(v.ok());
  CHECK(*v == 42);
  CHECK(v.value() == 42);
  CHECK(v.status().ok());
  Result<int> e(Status::Corruption("bad"));
  CHECK_FALSE(e.ok());
  CHECK(e.status().IsCorruption());
  CHECK(e.status().message() == "bad");

  Result<std::unique_ptr<std::string>> p(std::make_unique<std::string>("moved"));
  REQUIRE(p.ok());
  CHECK(**p == "moved");
  CHECK(p->get() != nullptr);
  std::unique_ptr<std::string> taken = std::move(p).value();
  CHECK(*taken == "moved");

  int reached = 0;
  CHECK(FailsEarly(true, &reached).IsNotFound());
  CHECK(reached == 0);
  CHECK(FailsEarly(false, &reached).ok());
  CHECK(reached == 1);
}

std::vector<char> Bytes(size_t n, uint32_t seed) { return testing::RandomBytes(n, seed); }

TEST_CASE("BufferedWriter round trips small and large appends", "[file_io]") {
  testing::TempDir dir;
  const std::string path = dir.path() + "/out.bin";
  auto w = BufferedWriter::Create(path, 64);
  REQUIRE(w.ok());
  CHECK((*w)->path() == path);
  std::vector<char> expect;
  // Fits the buffer, fills it exactly, overflows it, and bypasses it.
  for (size_t n : {size_t{1}, size_t{10}, size_t{53}, size_t{0}, size_t{30}, size_t{64},
                   size_t{1000}, size_t{7}, size_t{63}, size_t{65}, size_t{3}}) {
    std::vector<char> piece = Bytes(n, static_cast<uint32_t>(n + expect.size()));
    REQUIRE((*w)->Append(piece.data(), piece.size()).ok());
    expect.insert(expect.end(), piece.begin(), piece.end());
    CHECK((*w)->bytes_written() == expect.size());
  }
  REQUIRE((*w)->Close(/*sync=*/true).ok());
  CHECK((*w)->Close(false).code() == Code::kInvalidArgument);  // closed twice
  std::vector<char> got;
  REQUIRE(ReadWholeFile(path, &got).ok());
  CHECK(testing::Mismatch(got, expect) == "");
  CHECK(ReadWholeFile(path, &got, expect.size()).ok());
  Status changed = ReadWholeFile(path, &got, expect.size() + 1);
  CHECK(changed.code() == Code::kIOError);
  CHECK(Contains(changed.message(), path));

  // Create truncates an existing file.
  auto again = BufferedWriter::Create(path);
  REQUIRE(again.ok());
  REQUIRE((*again)->Append("abc", 3).ok());
  REQUIRE((*again)->Close(false).ok());
  REQUIRE(ReadWholeFile(path, &got).ok());
  CHECK(got == std::vector<char>{'a', 'b', 'c'});
}

TEST_CASE("BufferedWriter and ReadWholeFile report missing paths", "[file_io]") {
  testing::TempDir dir;
  auto w = BufferedWriter::Create(dir.path() + "/no/such/dir/file");
  REQUIRE_FALSE(w.ok());
  CHECK(w.status().IsNotFound());
  CHECK(Contains(w.status().message(), dir.path() + "/no/such/dir/file"));
  std::vector<char> out;
  Status st = ReadWholeFile(dir.path() + "/absent", &out);
  CHECK(st.IsNotFound());
  CHECK(Contains(st.message(), "absent"));
}

TEST_CASE("WriteFileAtomically writes and replaces a whole file", "[file_io]") {
  testing::TempDir dir;
  const std::vector<char> first = Bytes(3 << 20, 1);  // larger than its 1 MiB buffer
  REQUIRE(WriteFileAtomically(dir.path(), "manifest", first).ok());
  std::vector<char> got;
  REQUIRE(ReadWholeFile(dir.path() + "/manifest", &got).ok());
  CHECK(testing::Mismatch(got, first) == "");
  const std::vector<char> second = Bytes(100, 2);
  REQUIRE(WriteFileAtomically(dir.path(), "manifest", second).ok());
  REQUIRE(ReadWholeFile(dir.path() + "/manifest", &got).ok());
  CHECK(testing::Mismatch(got, second) == "");
  REQUIRE(WriteFileAtomically(dir.path(), "empty", {}).ok());
  REQUIRE(ReadWholeFile(dir.path() + "/empty", &got).ok());
  CHECK(got.empty());
  // No temporary file is left behind.
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"empty", "manifest"});
  Status st = WriteFileAtomically(dir.path() + "/missing", "manifest", second);
  CHECK(st.IsNotFound());
}

TEST_CASE("Random access files read exactly or report truncation", "[file_io]") {
  testing::TempDir dir;
  const std::vector<char> data = Bytes(5000, 3);
  REQUIRE(WriteFileAtomically(dir.path(), "f", data).ok());
  auto f = PosixRandomAccessFile::Open(dir.path() + "/f");
  REQUIRE(f.ok());
  CHECK((*f)->size() == data.size());
  MemoryFile mem("mem", data);
  for (const RandomAccessFile* file : {static_cast<const RandomAccessFile*>(f->get()),
                                       static_cast<const RandomAccessFile*>(&mem)}) {
    INFO(file->name());
    std::vector<char> buf(100);
    REQUIRE(file->ReadExact(4900, 100, buf.data()).ok());
    CHECK(std::equal(buf.begin(), buf.end(), data.begin() + 4900));
    CHECK(file->ReadExact(5000, 0, buf.data()).ok());
    Status past = file->ReadExact(4950, 100, buf.data());
    CHECK(past.IsCorruption());
    CHECK(Contains(past.message(), file->name()));
    CHECK(file->ReadExact(6000, 1, buf.data()).IsCorruption());
  }
  CHECK(PosixRandomAccessFile::Open(dir.path() + "/nope").status().IsNotFound());
}

TEST_CASE("ReadIfCached reads only what the page cache holds", "[file_io]") {
  testing::TempDir dir;
  const std::vector<char> data = Bytes(256 << 10, 4);
  REQUIRE(WriteFileAtomically(dir.path(), "f", data).ok());
  auto f = PosixRandomAccessFile::Open(dir.path() + "/f");
  REQUIRE(f.ok());
  std::vector<char> buf(data.size());
  REQUIRE((*f)->ReadExact(0, data.size(), buf.data()).ok());  // now cached
  std::vector<char> got(1000);
  REQUIRE((*f)->ReadIfCached(5000, got.size(), got.data()));
  CHECK(std::equal(got.begin(), got.end(), data.begin() + 5000));
  CHECK_FALSE((*f)->ReadIfCached(data.size() - 10, 100, got.data()));  // past the end
  MemoryFile mem("mem", data);
  CHECK_FALSE(mem.ReadIfCached(0, 10, got.data()));  // the default never reads

  // Dropped from the page cache (not possible on tmpfs, where the cache is the file).
  struct statfs fs;
  REQUIRE(::statfs(dir.path().c_str(), &fs) == 0);
  if (fs.f_type != TMPFS_MAGIC) {
    const int fd = ::open((dir.path() + "/f").c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    ::fdatasync(fd);
    // DONTNEED leaves pages still in another CPU's LRU batch (or under
    // write-back) in the cache: ask again until they are gone.
    bool cached = true;
    for (int attempt = 0; attempt < 100 && cached; ++attempt) {
      REQUIRE(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
      cached = (*f)->ReadIfCached(100 << 10, got.size(), got.data());
      if (cached) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::close(fd);
    CHECK_FALSE(cached);
    REQUIRE((*f)->ReadExact(100 << 10, got.size(), got.data()).ok());  // read the usual way
    REQUIRE((*f)->ReadIfCached(100 << 10, got.size(), got.data()));    // and now cached
    CHECK(std::equal(got.begin(), got.end(), data.begin() + (100 << 10)));
  }
}

}  // namespace
}  // namespace clairfs::format
